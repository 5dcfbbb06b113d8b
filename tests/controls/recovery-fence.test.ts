import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRecoveryPass } from '../../src/recovery/recovery.service.ts';
import { paymentDeps } from '../../src/payments/payments.routes.ts';
import { armFaultPoint } from '../../src/platform/faultpoints.ts';
import { armMutation } from '../../src/platform/mutations.ts';
import { createSku, startPaymentStack, type PaymentStack } from '../support/payments.ts';
import { waitFor } from '../support/poll.ts';

// Issue 55: the control of QF-01 (tests/orders/queued-fencing.test.ts). The same two stalled
// recoveries, with the one guard QF-01 proves switched off: recovery's bookkeeping fenced by its
// claim (`orders.recovery.claim-fence`). A's late bookkeeping then erases the live claim B holds,
// so the order is open to a third recovery while B still works on it.
describe('recovery fence control', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack();
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
  });
  afterAll(async () => s.close());

  it('QF-02 without the claim fence, the overtaken recovery A frees the claim B still holds', async () => {
    await createSku(s, { sku: 'qf2', stock: 1 });
    const o = await s.buy('qf2-user', 'qf2');
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
    const disarmStall = armFaultPoint('recovery.after-claim', async () => {
      const gate = gates[reached++];
      if (gate) await gate.closed;
    });
    const disarmFence = armMutation('orders.recovery.claim-fence');
    try {
      const passA = runRecoveryPass(deps, { staleAfterMs: 0 });
      await waitFor(async () => reached === 1 || undefined, 'recovery A holding its claim');
      s.clock.advance(31_000);
      const passB = runRecoveryPass(deps, { staleAfterMs: 0 });
      await waitFor(async () => reached === 2 || undefined, 'recovery B holding the taken-over claim');
      const claimB = (await claimOf())?.claim;
      expect(claimB).toBeInstanceOf(Date);

      gates[0]?.open();
      expect((await passA).resolved).toEqual({ PAID: 1 });
      // QF-01's check fires: B's live claim is gone from the row while B is still stalled on it.
      expect(await claimOf()).toEqual({ status: 'PAID', claim: null });

      gates[1]?.open();
      expect((await passB).still_pending).toEqual([]);
    } finally {
      disarmFence();
      disarmStall();
      for (const g of gates) g.open();
    }
  });
});
