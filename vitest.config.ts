import os from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';
import LongestFirst from './tests/support/sequencer.ts';

// Servers in child processes append what the document does not describe here (src/platform/contract.ts).
const contractLog = path.join(os.tmpdir(), `flashpay-contract-${process.pid}.log`);
process.env.FLASHPAY_CONTRACT_LOG = contractLog;

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    // tests/cluster runs alone: npm run test:cluster (vitest.cluster.config.ts).
    exclude: ['tests/cluster/**', 'node_modules/**'],
    globalSetup: ['tests/support/global-setup.ts'],
    setupFiles: ['tests/support/contract.ts'],
    // Every response of every server the suite starts is validated against its OpenAPI document.
    env: { FLASHPAY_CONTRACT_CHECK: '1', FLASHPAY_CONTRACT_LOG: contractLog },
    testTimeout: 60_000,
    // expect.poll waits for a page or a loop to get there (the browser tests): 1 s, the default,
    // was once too short for Chromium on a loaded 2-core run (OC-01's confirm dialog, stop 43).
    expect: { poll: { timeout: 10_000 } },
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    // One module graph per worker, not per file: re-evaluating fastify, pg, ajv and the sources for
    // each of ~110 files cost more CPU than many of the tests (a 32-file subset: 105 s -> 55 s).
    // Files must leave no state behind (fault points disarmed, env restored, servers closed).
    isolate: false,
    fileParallelism: true,
    // it.concurrent (the simulated sales) three at a time: a default PostgreSQL allows 100 connections.
    maxConcurrency: 3,
    sequence: { sequencer: LongestFirst },
    // A whole run checks the README's test count (tests/support/suite-numbers.ts, issue 49).
    reporters: ['default', './tests/support/suite-numbers.ts'],
  },
});
