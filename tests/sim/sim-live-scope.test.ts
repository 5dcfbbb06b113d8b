import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from 'flashpay/client';
import { BIN } from '../support/process.ts';
import { waitFor } from '../support/poll.ts';
import { startLiveStack, type LiveStack } from '../cli/live-stack.ts';

interface LiveSimJson {
  ok: boolean;
  sku: string;
  reconciliation: { ok: boolean; pending: number; mismatches: Array<{ order_id: string }> };
  global_reconciliation: { ok: boolean; mismatches: Array<{ order_id: string }> };
  lines: string[];
}

function run(stack: LiveStack, args: string[]) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: stack.dir, env: stack.env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('flashpay sim against a live stack (SS)', () => {
  let stack: LiveStack;
  beforeAll(async () => {
    stack = await startLiveStack({ prefix: 'flashpay-ss-' });
  });
  afterAll(async () => stack?.stop());

  it('SS-01: --api judges only the orders the sim made, in tenant acme by default; the stack’s own trouble is printed as global', async () => {
    // Someone else's trouble on the same stack: tenant "other", a PAID order whose amount was changed
    // by hand (a refund the provider made on its own would converge it now, issue 48).
    const admin = createClient({ baseUrl: stack.api, token: await stack.token('other', 'ops', 'admin') });
    await admin.raw.POST('/v1/admin/skus', { body: { sku: 'ss-foreign', name: 'Foreign', price: 990, stock: 1 } });
    const buyer = createClient({ baseUrl: stack.api, token: await stack.token('other', 'dave') });
    const foreign = await buyer.createOrder({ sku: 'ss-foreign' });
    await buyer.pay(foreign.order_id);
    await stack.database.pool.query('UPDATE orders SET amount = amount + 1 WHERE order_id = $1', [foreign.order_id]);
    const operator = await stack.token('acme', 'ops', 'operator');
    await waitFor(
      async () => {
        const r = await fetch(`${stack.api}/v1/admin/reconciliation`, {
          headers: { authorization: `Bearer ${operator}` },
        });
        const body = (await r.json()) as { mismatches: Array<{ order_id: string }> };
        return body.mismatches.some((m) => m.order_id === foreign.order_id) ? true : undefined;
      },
      'the foreign mismatch',
      30_000,
    );

    const sim = await run(stack, [
      ...['sim', '--seed', '7', '--orders', '10', '--stock', '10', '--late', '3', '--refund-timeouts', '1'],
      ...[
        '--mix',
        'decline=1,lost=1,linger=1,nopay=1,expire=2',
        '--api',
        stack.api,
        '--channel',
        stack.channel,
        '--json',
      ],
    ]);
    expect(sim.code, sim.stderr).toBe(0);
    const report = JSON.parse(sim.stdout) as LiveSimJson;
    expect(report.ok).toBe(true);
    expect(report.reconciliation).toMatchObject({ ok: true, pending: 0, mismatches: [] });
    expect(report.global_reconciliation.ok).toBe(false);
    expect(report.global_reconciliation.mismatches.map((m) => m.order_id)).toContain(foreign.order_id);
    expect(report.lines.at(-1)).toMatch(
      /^note global reconciliation \(every order on the stack, not judged\) ok=false/,
    );
    // The sale's orders are in the README's tenant.
    const tenants = await stack.database.pool.query<{ tenant_id: string; n: number }>(
      `SELECT tenant_id, count(*)::int AS n FROM orders WHERE user_id LIKE $1 GROUP BY tenant_id`,
      [`${report.sku}-%`],
    );
    expect(tenants.rows.map((r) => r.tenant_id)).toEqual(['acme']);
    expect(tenants.rows[0]!.n).toBeGreaterThanOrEqual(10);
  }, 300_000);
});
