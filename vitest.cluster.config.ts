import { defineConfig } from 'vitest/config';

// The cluster suite (tests/cluster): real pg_auto_failover, nats-server and HAProxy processes, one
// file at a time (each starts engines of its own on free loopback ports). `npm run test:cluster`;
// `.ci/run` runs it after `npm test` with FLASHPAY_REQUIRE_CLUSTER=1. It stays out of `npm test`:
// it needs Debian's engines and root, and its minutes would push the default suite past its budget.
export default defineConfig({
  test: {
    include: ['tests/cluster/**/*.test.ts'],
    globalSetup: ['tests/support/build-setup.ts'],
    testTimeout: 300_000,
    hookTimeout: 300_000,
    pool: 'forks',
    fileParallelism: false,
  },
});
