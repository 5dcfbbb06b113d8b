// flashpay/client, for the service's own code and tests: the workspace package @flashpay/client
// (packages/client) read from its source. Integrators install the package itself.
export * from '../../packages/client/src/index.ts';
// The sim and the tests call the Result-style client under its earlier name.
export type { FlashpayResultClient as FlashpayClient } from '../../packages/client/src/index.ts';
