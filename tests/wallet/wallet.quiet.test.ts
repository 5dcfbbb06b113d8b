import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../support/stack.ts';
import { eventually } from '../support/payments.ts';
import { createSku, credit, order, TENANT, walletPay } from './support.ts';

// Issue 38 item 3: a wallet pay's commit does not NOTIFY (notifying commits serialize on the
// notification queue's lock, and wallet pays commit one by one); its own process's relay is woken
// after the commit instead, and every other outbox writer still notifies (migration 175).
describe('wallet pays commit quietly and wake their own relay', () => {
  let s: Stack;
  let listener: pg.Client;
  const heard: string[] = [];
  beforeAll(async () => {
    s = await startStack();
    listener = new pg.Client({ connectionString: s.db.url });
    await listener.connect();
    listener.on('notification', (n) => heard.push(n.channel));
    await listener.query('LISTEN flashpay_outbox');
    // A poll interval of a minute: an event delivered within seconds was woken, not polled.
    s.deps.relay!.start(60_000);
  });
  afterAll(async () => {
    await listener.end();
    await s.close();
  });

  const delivered = async (orderId: string) =>
    (
      await s.db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM outbox WHERE order_id = $1 AND event_type = 'ORDER_PAID' AND published_at IS NOT NULL`,
        [orderId],
      )
    ).rows[0]!.n;

  it('WQ-01 a wallet pay writes its ORDER_PAID without a NOTIFY and its relay delivers it at once; another writer still notifies', async () => {
    await createSku(s, { sku: 'wq', price: 300, stock: 2 });
    const buyer = await s.token(TENANT, 'wq1');
    await credit(s, 'wq1', 300);
    const orderId = await order(s, buyer, 'wq');
    const paid = await walletPay(s, buyer, orderId);
    expect(paid.body).toEqual({ order_id: orderId, status: 'PAID' });
    expect(
      await eventually(
        () => delivered(orderId),
        (n) => n === 1,
      ),
    ).toBe(1);
    expect(heard).toEqual([]);

    // The positive control: a transaction that is not quiet notifies, on the same listener.
    // The row is taken out again once heard, long before the relay's next poll would deliver it.
    await s.db.pool.query(
      `INSERT INTO outbox (order_id, event_type, payload, order_version, created_at, next_attempt_at)
       SELECT order_id, 'ORDER_PAID', '{}'::jsonb, version + 100, now(), now() + interval '1 hour' FROM orders WHERE order_id = $1`,
      [orderId],
    );
    await eventually(
      async () => heard.length,
      (n) => n === 1,
    );
    await s.db.pool.query('DELETE FROM outbox WHERE order_id = $1 AND published_at IS NULL', [orderId]);
    // SET LOCAL: the quiet setting ended with the wallet pay's transaction, on every pooled connection.
    const settings = await Promise.all(
      Array.from({ length: 4 }, () =>
        s.db.pool.query<{ v: string | null }>("SELECT current_setting('flashpay.outbox_quiet', true) AS v"),
      ),
    );
    expect(settings.map((r) => r.rows[0]!.v ?? '')).toEqual(['', '', '', '']);
  });
});
