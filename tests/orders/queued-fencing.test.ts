import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRecoveryPass } from '../../src/recovery/recovery.service.ts';
import { paymentDeps } from '../../src/payments/payments.routes.ts';
import { armFaultPoint } from '../../src/platform/faultpoints.ts';
import { createSku, startPaymentStack, type PaymentStack } from '../support/payments.ts';
import { waitFor } from '../support/poll.ts';

// Fencing with N processes: a recovery paused past its claim is overtaken, and when it wakes its
// late writes are refused — the order's by the guarded transition (the decider acts on the status
// it finds under the order lock), its own bookkeeping by the claim token (recovery_claimed_until).
describe('fencing: a recovery paused past its claim', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack();
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
  });
  afterAll(async () => s.close());

  it('QF-01 recovery A claims an UNKNOWN order and stalls; B takes the lapsed claim over and stalls too; A wakes: its transition is the legitimate one, but its late bookkeeping cannot free the claim B holds, so a third recovery still keeps off', async () => {
    await createSku(s, { sku: 'qf1', stock: 1 });
    const o = await s.buy('qf1-user', 'qf1');
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_RESPONSE',
      merchant_order: o.orderId,
      ms: 400,
    });
    expect((await s.pay(o.token, o.orderId)).body.status).toBe('UNKNOWN');
    const deps = paymentDeps(s.deps);
    const claimOf = async () =>
      (
        await s.deps.db.query<{ status: string; claim: Date | null }>(
          'SELECT status, recovery_claimed_until AS claim FROM orders WHERE order_id = $1',
          [o.orderId],
        )
      ).rows[0];

    const gates = [0, 1].map(() => {
      let open: () => void = () => undefined;
      const closed = new Promise<void>((resolve) => (open = resolve));
      return { open: () => open(), closed };
    });
    let reached = 0;
    const disarm = armFaultPoint('recovery.after-claim', async () => {
      const gate = gates[reached++];
      if (gate) await gate.closed; // A, then B, stall right after their claims
    });
    try {
      const passA = runRecoveryPass(deps, { staleAfterMs: 0 });
      await waitFor(async () => reached === 1 || undefined, 'recovery A holding its claim');
      const claimA = (await claimOf())?.claim;
      // Nobody takes a live claim …
      expect((await runRecoveryPass(deps, { staleAfterMs: 0 })).examined).toBe(0);
      // … B takes it once it has lapsed (30 s), and stalls in its turn.
      s.clock.advance(31_000);
      const passB = runRecoveryPass(deps, { staleAfterMs: 0 });
      await waitFor(async () => reached === 2 || undefined, 'recovery B holding the taken-over claim');
      const claimB = (await claimOf())?.claim;
      expect(claimB?.getTime()).toBeGreaterThan(claimA?.getTime() ?? Infinity);

      gates[0]?.open();
      const a = await passA;
      // A's provider answer is real (the charge went through): the guarded transition applies it once.
      expect(a.resolved).toEqual({ PAID: 1 });
      // A's bookkeeping is fenced: B's claim is still on the row, so a third recovery keeps off.
      expect(await claimOf()).toEqual({ status: 'PAID', claim: claimB });
      expect((await runRecoveryPass(deps, { staleAfterMs: 0 })).examined).toBe(0);

      gates[1]?.open();
      const b = await passB;
      expect(b.still_pending).toEqual([]);
      // The order had already moved: B's answer changed nothing; PAID was entered once.
      const paid = await s.deps.db.query(
        "SELECT count(*)::int AS n FROM order_transitions WHERE order_id = $1 AND to_status = 'PAID'",
        [o.orderId],
      );
      expect(paid.rows[0]).toEqual({ n: 1 });
      expect(await claimOf()).toEqual({ status: 'PAID', claim: null });
      const order = await s.order(o.orderId);
      expect(order.status).toBe('PAID');
    } finally {
      disarm();
      for (const g of gates) g.open();
    }
  });
});
