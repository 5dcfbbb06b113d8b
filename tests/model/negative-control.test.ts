import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insistingCancel } from './broken-steps.ts';
import { cancelCmd, createCmd, payCmd } from './commands.ts';
import { invariantViolations } from './invariants.ts';
import { newRun, type Model } from './model.ts';
import { startWorld, type World } from './world.ts';

// The property can fail: the same commands and invariants as orders.model.test.ts, with one step
// deliberately broken (broken-steps.ts). fast-check must find a sequence that shows it, and the
// finding must be the damage the bug does, not an incidental error.
describe('model-based negative control: a broken step is caught', () => {
  let world: World;
  beforeAll(async () => {
    world = await startWorld();
  });
  afterAll(async () => world?.close());

  it('MB-NC1 a cancel that overwrites PAID without a guard: the property fails, naming the lost sale and the orphaned unit', async () => {
    const commands = [
      fc.constantFrom('u0', 'u1').map((u) => createCmd(u, { lines: 'one', qty: 1 })),
      fc.nat({ max: 3 }).map((r) => payCmd(r, 'none')),
      fc.nat({ max: 3 }).map((r) => cancelCmd(r)),
    ];
    const result = await fc.check(
      fc.asyncProperty(fc.scheduler(), fc.commands(commands, { maxCommands: 6 }), async (scheduler, cmds) => {
        const run = await newRun(world, scheduler, { stockA: 3, stockB: 0, limit: 2 }, insistingCancel);
        const model: Model = { orders: [] };
        await fc.asyncModelRun(() => ({ model, real: run }), cmds);
        const wrong = await invariantViolations(run, model);
        if (wrong.length > 0) throw new Error(wrong.join('\n'));
      }),
      { numRuns: 150, endOnFailure: true, seed: 1 },
    );
    expect(result.failed).toBe(true);
    const found = String((result.errorInstance as Error | undefined)?.message);
    // The late success notification even "repairs" the money (CANCELLED → REFUNDED), which makes the
    // bug worse to see by hand: the client was told PAID, and a unit stays sold to nobody.
    expect(found).toMatch(/answered PAID, now (CANCELLED|REFUNDED)/);
    expect(found).toMatch(/confirmed 1 != units of PAID orders 0/);
    expect(found).toMatch(/reconciliation not clean/);
  }, 60_000);
});
