import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows } from '../support/stack.ts';
import { killHard, runUntil } from '../support/child.ts';
import { createSku, eventually, startPaymentStack, type PaymentStack } from '../support/payments.ts';

type Held = Array<{ id: string; merchant_order: string; kind: string }>;

describe('crash recovery with real processes and kill -9', () => {
  let s: PaymentStack;
  beforeAll(async () => {
    s = await startPaymentStack();
    await s.control('POST', '/_control/callbacks', { mode: 'HOLD' });
  });
  afterAll(async () => s.close());

  it('C29-10 a process commits PAYING, charges, and dies: a fresh order is left alone, a stale one is queried to PAID', async () => {
    // Proves PAYING committed before the call is what lets recovery find a charge whose process died.
    await createSku(s, { sku: 'k10', stock: 2 });
    const o = await s.buy('k10-user', 'k10');
    const child = await runUntil(
      'pay-process.ts',
      ['pay', s.db.url, s.channel.url, o.orderId, s.deps.notifyUrl],
      'STAGE pay.after-charge',
      { FLASHPAY_FAULTPOINT: 'pay.after-charge' },
    );
    expect(await killHard(child)).toBe('SIGKILL');
    expect((await s.order(o.orderId)).status).toBe('PAYING');
    expect(await s.control('GET', `/charges/${o.orderId}`)).toMatchObject({ status: 'CHARGED' });

    s.clock.set(new Date()); // the test clock stands still; the child wrote PAYING at real time
    const patient = await s.recover(60_000);
    expect(patient.body.still_pending).toEqual([]);
    expect((await s.order(o.orderId)).status).toBe('PAYING'); // it might still be paying: not touched

    const eager = await s.recover(0);
    expect(eager.body.resolved).toMatchObject({ PAID: 1 });
    const view = await s.order(o.orderId);
    expect([view.status, view.reservation.status, view.timeline.at(-1)?.reason]).toEqual([
      'PAID',
      'CONFIRMED',
      'query',
    ]);
    const held = ((await s.control('GET', '/_control/callbacks/held')) as Held).filter(
      (h) => h.merchant_order === o.orderId,
    );
    await s.control('POST', '/_control/callbacks/release', { ids: held.map((h) => h.id) });
    const after = await eventually(
      () => s.order(o.orderId),
      (v) => v.notifications.length === 1,
    );
    expect(after.notifications[0]?.effect).toBe('DUPLICATE');
  });

  it('C29-11 a process dies inside the success transaction before commit: nothing of it survives; recovery makes it PAID once', async () => {
    // Proves confirm, PAID and the outbox row commit together or not at all.
    await createSku(s, { sku: 'k11', stock: 2 });
    const o = await s.buy('k11-user', 'k11');
    await s.control('POST', '/_control/faults', {
      op: 'charge',
      kind: 'DELAY_RESPONSE',
      merchant_order: o.orderId,
      ms: 400,
    });
    expect((await s.pay(o.token, o.orderId)).body.status).toBe('UNKNOWN');
    const child = await runUntil(
      'pay-process.ts',
      ['charged', s.db.url, s.channel.url, o.orderId, s.deps.notifyUrl],
      'STAGE charged.before-commit',
      { FLASHPAY_FAULTPOINT: 'charged.before-commit' },
    );
    // Other sessions still see the committed state while the doomed transaction holds its writes.
    expect((await s.order(o.orderId)).status).toBe('UNKNOWN');
    expect(await killHard(child)).toBe('SIGKILL');
    // The server rolls the transaction back once it sees the connection gone; wait for its lock to go.
    await eventually(
      async () =>
        (
          await s.db.pool.query(
            `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE a.state = 'idle in transaction'`,
          )
        ).rows[0]?.n,
      (n) => n === 0,
    );
    const view = await s.order(o.orderId);
    expect([view.status, view.reservation.status]).toEqual(['UNKNOWN', 'HELD']);
    expect(await countRows(s.db, 'outbox', 'order_id = $1', [o.orderId])).toBe(0);

    expect((await s.recover(0)).body.resolved).toMatchObject({ PAID: 1 });
    expect((await s.order(o.orderId)).status).toBe('PAID');
    expect(await countRows(s.db, 'outbox', 'order_id = $1', [o.orderId])).toBe(1);
    expect(await countRows(s.db, 'order_transitions', "order_id = $1 AND to_status = 'PAID'", [o.orderId])).toBe(1);
  });
});
