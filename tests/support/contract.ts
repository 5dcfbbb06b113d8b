import { afterEach, expect } from 'vitest';
import { collectContractViolationsPerTest, takeContractViolations } from '../../src/platform/contract.ts';

collectContractViolationsPerTest();

// Every test is held to the OpenAPI document: a response that the document does not describe
// (status, header, media type or body shape) fails the test that caused it.
afterEach(() => {
  expect(takeContractViolations(), 'responses not described by the OpenAPI document').toEqual([]);
});
