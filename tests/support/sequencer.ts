import { BaseSequencer, type TestSpecification } from 'vitest/node';

// On a fresh clone vitest has no record of how long each file took, so a two-minute file can start
// last and run alone at the end. These files take longest (measured in CI); they start first, the
// rest keep vitest's own order. Only the wall time changes, never what runs.
const LONGEST_FIRST = [
  // Measured in a whole run on merged main, 2026-12-08 (issue 49: 789 tests in 397 s), slowest first.
  'tests/sim/sim.test.ts',
  'tests/faults/crash-matrix.test.ts',
  'tests/reconcile/classes.test.ts',
  'tests/sim/sim-async.test.ts',
  'tests/sim/sim-crash.test.ts',
  'tests/faults/db-restart-external.test.ts',
  'tests/providers/sim.providers.test.ts',
  'tests/payments/negative-controls.test.ts',
  'tests/faults/db-terminate.test.ts',
  'tests/model/orders.model.test.ts',
  'tests/client/package.test.ts',
  'tests/web/oncall.browser.test.ts',
  'tests/cli/split-amqp.test.ts',
  'tests/cli/split-jetstream.test.ts',
  'tests/cli/start-crash.test.ts',
  'tests/orders/queued-resend.test.ts',
  'tests/web/ops.browser.test.ts',
  'tests/payments/pay.lost-and-reordered-answers.test.ts',
  'tests/observability/prometheus-live.test.ts',
  'tests/cli/split-database.test.ts',
  'tests/web/storefront.browser.test.ts',
  'tests/web/console.browser.test.ts',
  'tests/client/readme.test.ts',
  'tests/platform/rolling-deploy.test.ts',
];

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) => {
      const i = LONGEST_FIRST.findIndex((name) => file.moduleId.replaceAll('\\', '/').endsWith(name));
      return i === -1 ? LONGEST_FIRST.length : i;
    };
    return sorted
      .map((file, index) => ({ file, index }))
      .sort((a, b) => rank(a.file) - rank(b.file) || a.index - b.index)
      .map(({ file }) => file);
  }
}
