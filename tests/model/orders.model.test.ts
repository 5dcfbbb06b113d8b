import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commandArbitraries } from './commands.ts';
import { invariantViolations } from './invariants.ts';
import { newRun, type Model } from './model.ts';
import { fcParams } from './params.ts';
import { startWorld, type World } from './world.ts';

// Model-based: random sequences of create (one or two lines, quantity 2, a per-user limit), pay with
// the provider's reply lost / late / failed / declined, notifications held and delivered in any order
// and twice, cancel, hold expiry, recovery, crash-restart during a pay, and bursts of concurrent
// requests ordered by fast-check's scheduler — then, once converged, every invariant (invariants.ts).
// A failure prints its seed and path; FLASHPAY_FC_SEED / FLASHPAY_FC_PATH replay it (docs/testing.md).
describe('model-based: orders, payments and faults against a simple model', () => {
  let world: World;
  beforeAll(async () => {
    world = await startWorld();
  });
  afterAll(async () => world?.close());

  it('MB-1 no oversell, no double charge, one event per terminal state, answers stand, reconciliation clean', async () => {
    const stats = { runs: 0, commands: 0, restarts: 0 };
    const kinds = new Map<string, number>();
    const params = fcParams<[fc.Scheduler, unknown, unknown]>(200);
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.record({
          stockA: fc.integer({ min: 1, max: 4 }),
          stockB: fc.integer({ min: 0, max: 2 }),
          limit: fc.constantFrom(1, 2, 3),
        }),
        fc.commands(commandArbitraries, { maxCommands: 7 }),
        async (scheduler, shape, commands) => {
          const run = await newRun(world, scheduler, shape);
          const model: Model = { orders: [] };
          const restarts = world.restarts;
          await fc.asyncModelRun(() => ({ model, real: run }), commands);
          const wrong = await invariantViolations(run, model);
          stats.runs++;
          for (const c of commands) {
            const name = c.toString().split('(')[0] ?? '?';
            kinds.set(name, (kinds.get(name) ?? 0) + 1);
            stats.commands++;
          }
          stats.restarts += world.restarts - restarts;
          if (wrong.length > 0) throw new Error(`invariants broken in tenant ${run.tenant}:\n${wrong.join('\n')}`);
        },
      ),
      params,
    );
    console.log(
      `model runs ${stats.runs}, commands generated ${stats.commands}, crash-restarts ${stats.restarts}: ${JSON.stringify(Object.fromEntries(kinds))}`,
    );
    expect(stats.runs).toBeGreaterThanOrEqual(params.numRuns ?? 200);
  }, 600_000); // ~50 s on a quiet 2-core box; generous for one shared by four test suites
});
