// TEST ONLY — the negative control's broken step. It lives under tests/ so no production path can
// reach it: a cancel that, refused because the order is already PAID, "insists" with a write
// that has no prior-state guard (the class of bug of C29-16). The client still hears 409, so only
// the invariants can notice: the order is CANCELLED, its charge stands, its unit stays confirmed.
import type { BrokenSteps } from './model.ts';

export const insistingCancel: BrokenSteps = {
  async cancel(run, order) {
    const answer = await run.world.call('POST', `/v1/orders/${order.id}/cancel`, {
      token: await run.buyer(order.user),
    });
    if (answer.status === 409 && answer.body?.order_status === 'PAID')
      await run.world.db.pool.query(
        `UPDATE orders SET status = 'CANCELLED', version = version + 1 WHERE order_id = $1`,
        [order.id],
      );
    return { status: answer.status, orderStatus: answer.body?.status ?? answer.body?.order_status };
  },
};
