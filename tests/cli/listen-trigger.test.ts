import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { constructEvent, createClient, type OrderEvent } from 'flashpay/client';
import { BIN, waitForExit } from '../support/process.ts';
import { waitFor } from '../support/poll.ts';
import { LIVE_EVENTS_SECRET, startLiveStack, type LiveStack } from './live-stack.ts';

// `flashpay listen` and `flashpay trigger` against a real `flashpay start --control`, as a developer
// runs them in a second terminal beside it (its directory, its runtime.json, its secrets).

function runCli(stack: LiveStack, args: string[]) {
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

describe('flashpay listen / trigger (LT)', () => {
  let stack: LiveStack;
  let admin: ReturnType<typeof createClient>;
  beforeAll(async () => {
    stack = await startLiveStack({ prefix: 'flashpay-lt-' });
    admin = createClient({ baseUrl: stack.api, token: await stack.token('acme', 'ops', 'admin') });
    for (const sku of ['lt-tee', 'lt-mug'])
      expect(
        (await admin.raw.POST('/v1/admin/skus', { body: { sku, name: sku, price: 1990, stock: 10 } })).response.status,
      ).toBe(201);
  });
  afterAll(async () => stack?.stop());

  it('LT-01: listen prints each delivered event once, filters by --events and forwards it signed as the webhook sink signs', async () => {
    const received: OrderEvent[] = [];
    const receiver = http.createServer((request, response) => {
      let body = '';
      request.on('data', (c: Buffer) => (body += c.toString()));
      request.on('end', () => {
        // The receiver an integrator writes: verify with the events secret, or refuse.
        try {
          received.push(constructEvent(body, request.headers['flashpay-signature'] as string, LIVE_EVENTS_SECRET));
          response.end('{}');
        } catch {
          response.statusCode = 400;
          response.end();
        }
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const port = (receiver.address() as { port: number }).port;
    const listener: ChildProcess = spawn(
      process.execPath,
      [BIN, 'listen', '--json', '--events', 'ORDER_PAID', '--forward-to', `http://127.0.0.1:${port}/hooks/flashpay`],
      { cwd: stack.dir, env: stack.env, detached: true },
    );
    let out = '';
    let err = '';
    listener.stdout?.on('data', (c: Buffer) => (out += c.toString()));
    listener.stderr?.on('data', (c: Buffer) => (err += c.toString()));
    try {
      await waitFor(
        async () => (err.includes('following delivered events') ? true : undefined),
        'listen ready',
        60_000,
      );
      const buyer = createClient({ baseUrl: stack.api, token: await stack.token('acme', 'lt-bob') });
      const paid = await buyer.createOrder({ sku: 'lt-tee' });
      await buyer.pay(paid.order_id);
      const cancelled = await buyer.createOrder({ sku: 'lt-mug' });
      await buyer.cancelOrder(cancelled.order_id);
      const lines = await waitFor(
        async () => {
          const parsed = out
            .trim()
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l) as OrderEvent & { forwarded?: string });
          return parsed.some((e) => e.order_id === paid.order_id) ? parsed : undefined;
        },
        'the PAID event printed',
        30_000,
      );
      // Give the cancellation's event time to be delivered too: it must not be printed.
      await waitFor(
        async () =>
          (
            await stack.database.pool.query('SELECT 1 FROM outbox WHERE order_id = $1 AND published_at IS NOT NULL', [
              cancelled.order_id,
            ])
          ).rowCount
            ? true
            : undefined,
        'the CANCELLED event delivered',
        30_000,
      );
      await new Promise((resolve) => setTimeout(resolve, 600));
      const printed = out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as OrderEvent & { forwarded?: string });
      expect(printed.map((e) => [e.order_id, e.event_type, e.forwarded])).toEqual([
        [paid.order_id, 'ORDER_PAID', 'ok'],
      ]);
      expect(lines[0]).toMatchObject({ order_version: 3, payload: expect.any(Object) });
      expect(received.map((e) => [e.order_id, e.event_type])).toEqual([[paid.order_id, 'ORDER_PAID']]);
    } finally {
      if (listener.pid) process.kill(-listener.pid, 'SIGTERM');
      await waitForExit(listener);
      await new Promise((resolve) => receiver.close(resolve));
    }
    expect(listener.exitCode).toBe(0);
  }, 180_000);

  it('LT-02: trigger makes each provider event happen to a real order, with the outcome flashpay promises', async () => {
    const buyer = createClient({ baseUrl: stack.api, token: await stack.token('acme', 'lt-carol') });
    const view = async (id: string) => {
      const { data } = await admin.raw.GET('/v1/admin/orders/{id}', { params: { path: { id } } });
      return data!;
    };
    const trigger = async (what: string, id: string) => {
      const r = await runCli(stack, ['trigger', what, '--order', id, '--json']);
      expect([what, r.code, r.stderr]).toEqual([what, 0, '']);
      return JSON.parse(r.stdout) as { trigger: string; order_id: string; provider: Record<string, unknown> };
    };

    // charged: the provider charges an order nobody paid yet; its notification makes it PAID.
    const charged = await buyer.createOrder({ sku: 'lt-tee' });
    await trigger('charged', charged.order_id);
    await waitFor(async () => ((await view(charged.order_id)).status === 'PAID' ? true : undefined), 'PAID', 30_000);

    // declined: the next pay is declined; the order FAILED and its unit is back.
    const declined = await buyer.createOrder({ sku: 'lt-tee' });
    await trigger('declined', declined.order_id);
    expect((await buyer.results.payOrder(declined.order_id)).data?.status).toBe('FAILED');
    expect((await view(declined.order_id)).reservation?.status).toBe('RELEASED');

    // lost-reply: the charge's reply never comes; the money moved, and its notification (or recovery's
    // query) makes the order PAID all the same, charged once.
    const lost = await buyer.createOrder({ sku: 'lt-tee' });
    await trigger('lost-reply', lost.order_id);
    await buyer.results.payOrder(lost.order_id);
    await waitFor(async () => ((await view(lost.order_id)).status === 'PAID' ? true : undefined), 'converged', 90_000);
    const requests = (await (await fetch(`${stack.channel}/_control/requests`)).json()) as {
      charge: { by_order: Record<string, number> };
    };
    expect(requests.charge.by_order[lost.order_id]).toBe(1);
    const statement = (await (await fetch(`${stack.channel}/charges/${lost.order_id}`)).json()) as { status: string };
    expect(statement.status).toBe('CHARGED');

    // duplicate-callback (same notify_id: answered from its record) and late-callback (a new
    // notify_id for the same charge): both delivered, neither applied a second time.
    const duplicate = await trigger('duplicate-callback', charged.order_id);
    const late = await trigger('late-callback', charged.order_id);
    expect([duplicate.provider.status, late.provider.status]).toEqual(['DELIVERED', 'DELIVERED']);
    const settled = await waitFor(
      async () => {
        const v = await view(charged.order_id);
        return v.notifications.length >= 2 ? v : undefined;
      },
      'two notifications recorded',
      30_000,
    );
    expect(settled.notifications.map((n) => n.effect).sort()).toEqual(['DUPLICATE', 'PAID']);
    expect(settled).toMatchObject({ status: 'PAID', version: 2 }); // CREATED → PAID, once

    // refunded: a refund the provider made on its own (its dashboard) converges the order to
    // REFUNDED by its notification (issue 48), with no refund of ours.
    await trigger('refunded', charged.order_id);
    const flagged = await waitFor(
      async () => {
        const v = await view(charged.order_id);
        return v.notifications.some((n) => n.kind === 'REFUNDED') ? v : undefined;
      },
      'the refund notification',
      30_000,
    );
    expect(flagged.status).toBe('REFUNDED');
    expect(flagged.notifications.find((n) => n.kind === 'REFUNDED')).toMatchObject({
      effect: 'REFUNDED',
      needs_attention: false,
    });

    // A usage error acts on nothing.
    const wrong = await runCli(stack, ['trigger', 'exploded', '--order', charged.order_id]);
    expect([wrong.code, wrong.stdout]).toEqual([2, '']);
  }, 240_000);
});

describe('flashpay trigger with a control token (LT-03)', () => {
  let stack: LiveStack;
  beforeAll(async () => {
    stack = await startLiveStack({
      prefix: 'flashpay-lt3-',
      env: { FLASHPAY_CONTROL_TOKEN: 'lt3-control-token-of-at-least-32-bytes' },
    });
  });
  afterAll(async () => stack?.stop());

  it('LT-03: trigger sends FLASHPAY_CONTROL_TOKEN as a bearer token; without it the channel refuses and nothing is armed', async () => {
    const admin = createClient({ baseUrl: stack.api, token: await stack.token('acme', 'ops', 'admin') });
    await admin.raw.POST('/v1/admin/skus', { body: { sku: 'lt3', name: 'lt3', price: 500, stock: 2 } });
    const buyer = createClient({ baseUrl: stack.api, token: await stack.token('acme', 'lt3-erin') });
    const order = await buyer.createOrder({ sku: 'lt3' });
    const refused = await runCli({ ...stack, env: { ...stack.env, FLASHPAY_CONTROL_TOKEN: '' } }, [
      'trigger',
      'declined',
      '--order',
      order.order_id,
    ]);
    expect([refused.code, refused.stderr]).toEqual([1, expect.stringMatching(/answered 401/)]);
    const accepted = await runCli(stack, ['trigger', 'declined', '--order', order.order_id]);
    expect([accepted.code, accepted.stderr]).toEqual([0, '']);
    // Armed once, by the accepted call only: the pay is declined, and the order FAILED.
    expect((await buyer.results.payOrder(order.order_id)).data?.status).toBe('FAILED');
  }, 120_000);
});

describe('flashpay trigger and an order at another provider (LT-04, issue 48)', () => {
  let stack: LiveStack;
  beforeAll(async () => {
    // acme pays through Stripe (its double runs in the process: no credentials), globex through the fake channel.
    stack = await startLiveStack({ prefix: 'flashpay-lt4-', env: { FLASHPAY_PROVIDER_TENANTS: 'acme:stripe' } });
  });
  afterAll(async () => stack?.stop());

  it('LT-04: trigger refuses (exit 2, nothing armed) an order whose money is at Stripe; a fake-channel order it still acts on', async () => {
    const admin = createClient({ baseUrl: stack.api, token: await stack.token('acme', 'ops', 'admin') });
    await admin.raw.POST('/v1/admin/skus', { body: { sku: 'lt4', name: 'lt4', price: 500, stock: 2 } });
    const buyer = createClient({ baseUrl: stack.api, token: await stack.token('acme', 'lt4-erin') });
    const order = await buyer.createOrder({ sku: 'lt4' });
    const refused = await runCli(stack, ['trigger', 'charged', '--order', order.order_id]);
    expect([refused.code, refused.stdout]).toEqual([2, '']);
    expect(refused.stderr).toMatch(new RegExp(`${order.order_id} pays through stripe, not the fake channel`));
    const view = await admin.raw.GET('/v1/admin/orders/{id}', { params: { path: { id: order.order_id } } });
    expect(view.data?.status).toBe('CREATED');
    // globex is on the fake channel: trigger acts there.
    const globex = createClient({ baseUrl: stack.api, token: await stack.token('globex', 'ops', 'admin') });
    await globex.raw.POST('/v1/admin/skus', { body: { sku: 'lt4g', name: 'lt4g', price: 500, stock: 2 } });
    const other = await createClient({ baseUrl: stack.api, token: await stack.token('globex', 'lt4-gus') }).createOrder(
      { sku: 'lt4g' },
    );
    const acted = await runCli(stack, ['trigger', 'declined', '--order', other.order_id, '--tenant', 'globex']);
    expect([acted.code, acted.stderr]).toEqual([0, '']);
  }, 120_000);
});
