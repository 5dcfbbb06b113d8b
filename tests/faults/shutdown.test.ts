import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForExit } from '../support/process.ts';
import { eventually } from '../support/payments.ts';
import { FAULT_TENANT, startFaultStack, type FaultStack } from './support.ts';

// Proves SIGTERM is a graceful stop: 64 pays whose charges are at the provider when the signal
// arrives all get their real answer (PAID), the process exits 0, and every answer is in the database.
describe('graceful shutdown', () => {
  let s: FaultStack;
  let second: FaultStack | undefined;
  beforeAll(async () => {
    s = await startFaultStack({ env: { FLASHPAY_PAY_TIMEOUT_MS: '5000' } });
  });
  afterAll(async () => {
    await s?.close();
    await second?.close();
  });

  it('S-01: SIGTERM during 64 in-flight pays: every client gets a real answer, nothing lost', async () => {
    expect(
      (await s.adminCall('POST', '/v1/admin/skus', { sku: 'tee', name: 'Tee', price: 700, stock: 64 })).status,
    ).toBe(201);
    const buyers = await Promise.all(
      Array.from({ length: 64 }, (_, i) => s.signer.sign({ tenantId: FAULT_TENANT, userId: `b${i}`, scope: 'buyer' })),
    );
    const call = async (path: string, token: string, key: string, body?: unknown) => {
      const response = await fetch(`${s.proc.api}${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'idempotency-key': key,
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const orders = await Promise.all(
      buyers.map(async (token, i) => String((await call('/v1/orders', token, `o${i}`, { sku: 'tee' })).body.order_id)),
    );
    const control = (path: string, body?: unknown) =>
      fetch(`${s.proc.channel}${path}`, {
        method: body ? 'POST' : 'GET',
        headers: body ? { 'content-type': 'application/json' } : {},
        body: body ? JSON.stringify(body) : undefined,
      }).then((r) => r.json());
    // Each charge is booked at once and its reply held 1.5 s: the pays are in flight at the provider.
    await control('/_control/faults', { op: 'charge', kind: 'DELAY_RESPONSE', ms: 1_500, times: 64 });

    const pays = buyers.map((token, i) =>
      call(`/v1/orders/${orders[i]}/pay`, token, `p${i}`).catch((error: Error) => ({
        status: 0,
        body: { error: error.message } as Record<string, unknown>,
      })),
    );
    await eventually(
      async () => ((await control('/_control/requests')) as { charge: { total: number } }).charge.total,
      (n) => n === 64,
      30_000,
    );
    s.proc.child.kill('SIGTERM');
    const answers = await Promise.all(pays);
    expect(await waitForExit(s.proc.child)).toBe(0);

    expect(answers.map((a) => `${a.status} ${String(a.body.status)}`)).toEqual(answers.map(() => '200 PAID'));
    const rows = await s.db.pool.query<{ status: string; n: number }>(
      'SELECT status, count(*)::int AS n FROM orders WHERE order_id = ANY($1) GROUP BY status',
      [orders],
    );
    expect(rows.rows).toEqual([{ status: 'PAID', n: 64 }]);
    const events = await s.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM outbox WHERE event_type = 'ORDER_PAID' AND order_id = ANY($1)`,
      [orders],
    );
    expect(events.rows[0]?.n).toBe(64);
    expect(s.proc.stderr()).not.toMatch(/Cannot use a pool after calling end/);
  }, 120_000);

  it('S-02: a second signal while a pay is still in flight exits at once; the pay is PAYING for recovery (or PAID by notification)', async () => {
    second = await startFaultStack({ env: { FLASHPAY_PAY_TIMEOUT_MS: '30000', FLASHPAY_SHUTDOWN_GRACE_MS: '60000' } });
    const t = second;
    expect(
      (await t.adminCall('POST', '/v1/admin/skus', { sku: 'slow', name: 'Slow', price: 700, stock: 1 })).status,
    ).toBe(201);
    const buyer = await t.signer.sign({ tenantId: FAULT_TENANT, userId: 'patient', scope: 'buyer' });
    const headers = (key: string) => ({
      authorization: `Bearer ${buyer}`,
      'idempotency-key': key,
      'content-type': 'application/json',
    });
    const created = (await (
      await fetch(`${t.proc.api}/v1/orders`, { method: 'POST', headers: headers('o'), body: '{"sku":"slow"}' })
    ).json()) as { order_id: string };
    await fetch(`${t.proc.channel}/_control/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ op: 'charge', kind: 'DELAY_RESPONSE', ms: 20_000 }),
    });
    const paying = fetch(`${t.proc.api}/v1/orders/${created.order_id}/pay`, {
      method: 'POST',
      headers: headers('p'),
    }).catch(() => 'cut');
    await eventually(
      async () =>
        ((await (await fetch(`${t.proc.channel}/_control/requests`)).json()) as { charge: { total: number } }).charge
          .total,
      (n) => n === 1,
    );
    t.proc.child.kill('SIGTERM');
    await eventually(
      async () => t.proc.stderr(),
      (text) => /stopping/.test(text),
    );
    t.proc.child.kill('SIGTERM');
    expect(await waitForExit(t.proc.child)).toBe(1);
    expect(t.proc.stderr()).toMatch(/second signal: exiting now/);
    expect(await paying).toBe('cut');
    const order = await t.db.pool.query<{ status: string }>('SELECT status FROM orders WHERE order_id = $1', [
      created.order_id,
    ]);
    // PAYING was committed before the call, so recovery converges it; or the provider's CHARGED
    // notification, sent as the charge was booked, already made it PAID. Never lost, never CREATED.
    expect(['PAYING', 'PAID']).toContain(order.rows[0]?.status);
  }, 120_000);
});
