import { startChannel, type LedgerStore, type RunningChannel } from '../../src/channel/index.ts';
import type { ReceivedRequest } from '../../src/channel/wire.ts';
import { signPayload } from '../../src/platform/signature.ts';
import { paymentDeps } from '../../src/payments/payments.routes.ts';
import { recoverAll } from '../../src/recovery/recovery.full.ts';
import { sagaDeps } from '../../src/recovery/recovery.saga.ts';
import { staleFloorMs } from '../../src/recovery/recovery.routes.ts';
import { createSku, placeOrder, TENANT } from './fixtures.ts';
import { startStack, TEST_NOTIFY_SECRET, type HttpResult, type Stack, type StackOptions } from './stack.ts';
import { defaultTestProvider, providerHarness, type NotifyOptions, type TestProvider } from './providers/index.ts';

export interface PaymentStack extends Stack {
  channel: RunningChannel;
  /** The provider this stack pays through: the fake channel or a real provider's double. */
  provider: TestProvider;
  admin: string;
  /** An operator of every tenant (drain, cross-tenant recovery). */
  operator: string;
  control(method: string, path: string, body?: unknown): Promise<unknown>;
  statement(): Promise<{
    lines: Array<{ type: string; merchant_order: string; amount: number; ref: string }>;
    net: number;
  }>;
  chargeRequests(orderId?: string): Promise<number>;
  /** Every request the provider's double received, in order (`/_control/requests`' `received`). */
  received(): Promise<ReceivedRequest[]>;
  buy(user: string, sku: string, key?: string): Promise<{ orderId: string; token: string; key: string }>;
  pay(token: string, orderId: string, key?: string): Promise<HttpResult>;
  recover(staleAfterMs?: number): Promise<HttpResult>;
  order(orderId: string): Promise<{
    status: string;
    version: number;
    reservation: { key: string; status: string };
    timeline: Array<{ from: string | null; to: string; reason: string }>;
    notifications: Array<{ notify_id: string; kind: string; effect: string }>;
    attention: string | null;
  }>;
  notify(body: Record<string, unknown>, options?: { secret?: string; at?: number }): Promise<HttpResult>;
  /** The same notification in the stack's provider's words (issue 37); the fake channel's by default. */
  notifyAs(body: Record<string, unknown>, options?: NotifyOptions): Promise<HttpResult>;
}

/**
 * The order API plus a real fake channel on its own port, wired as `flashpay start` wires them.
 * `channelStore` gives the channel a ledger other than memory (its PostgreSQL store).
 */
export async function startPaymentStack(
  options: StackOptions & { channelStore?: LedgerStore; provider?: TestProvider } = {},
): Promise<PaymentStack> {
  const harness = await providerHarness(options.provider ?? defaultTestProvider());
  const channel = await startChannel({
    store: options.channelStore,
    notifySecret: TEST_NOTIFY_SECRET,
    control: true,
    notifyRetryBaseMs: 20,
    notifyMaxAttempts: 5,
    ...(harness.dialect ? { dialect: harness.dialect, bodyLimitBytes: 64 * 1024 } : {}),
  });
  const stack = await startStack({
    ...options,
    config: { ...options.config, ...harness.config(channel.url) },
    channelUrl: channel.url,
  });
  await harness.connect?.(channel.url, stack.url);
  const admin = await stack.token(TENANT, 'ops', 'admin');
  const operator = await stack.token(TENANT, 'root', 'operator');
  const control = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${channel.url}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status >= 400) throw new Error(`channel ${method} ${path}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  let keys = 0;
  return {
    ...stack,
    channel,
    provider: harness.name,
    admin,
    operator,
    control,
    // A double's own statement is in its provider's format; `/_control/statement` is its ledger in ours.
    statement: async () =>
      (await control('GET', harness.dialect ? '/_control/statement' : '/statement')) as Awaited<
        ReturnType<PaymentStack['statement']>
      >,
    async chargeRequests(orderId) {
      const counts = (await control('GET', '/_control/requests')) as {
        charge: { total: number; by_order: Record<string, number> };
      };
      return orderId ? (counts.charge.by_order[orderId] ?? 0) : counts.charge.total;
    },
    received: async () => ((await control('GET', '/_control/requests')) as { received: ReceivedRequest[] }).received,
    async buy(user, sku, key = `buy-${++keys}`) {
      const token = await stack.token(TENANT, user);
      const created = await placeOrder(stack, token, key, { sku });
      if (created.status !== 201) throw new Error(`buy failed: ${created.status} ${created.text}`);
      return { orderId: created.body.order_id as string, token, key };
    },
    pay: (token, orderId, key = `pay-${++keys}`) =>
      stack.call('POST', `/v1/orders/${orderId}/pay`, { token, headers: { 'idempotency-key': key } }),
    // The API refuses a threshold below its floor (the pay timeout + 1 s: a pay may still be in
    // flight). Recovery tests that need "stale now" run the same pass in-process, as
    // `flashpay recover` does; tests/security covers the floor itself.
    async recover(staleAfterMs = 0) {
      if (staleAfterMs >= staleFloorMs(stack.deps.config))
        return stack.call('POST', '/v1/admin/recovery/run', {
          token: operator,
          body: { stale_after_ms: staleAfterMs },
        });
      const report = await recoverAll(paymentDeps(stack.deps), {
        staleAfterMs,
        relay: stack.deps.relay,
        reconcile: true,
        saga: sagaDeps(stack.deps),
      });
      const text = JSON.stringify(report);
      return {
        status: 200,
        headers: new Headers({ 'content-type': 'application/json' }),
        text,
        body: JSON.parse(text),
      };
    },
    async order(orderId) {
      const result = await stack.call('GET', `/v1/admin/orders/${orderId}`, { token: admin });
      if (result.status !== 200) throw new Error(`admin order view: ${result.status} ${result.text}`);
      return result.body;
    },
    notify(body, notifyOptions = {}) {
      const raw = JSON.stringify(body);
      const signature = signPayload(
        notifyOptions.secret ?? TEST_NOTIFY_SECRET,
        raw,
        notifyOptions.at ?? Math.floor(Date.now() / 1000),
      );
      return stack.call('POST', '/v1/payment-notifications', {
        rawBody: raw,
        headers: { 'flashpay-signature': signature },
      });
    },
    notifyAs: (body, notifyOptions) => harness.notify(stack, body, notifyOptions),
    async close() {
      await stack.close();
      await channel.close();
    },
  };
}

export { createSku, TENANT };

/**
 * A bought order whose pay answer is lost: the provider answers after `lostMs`, past the stack's
 * pay timeout, so the pay says UNKNOWN (the charge itself goes through).
 */
export async function unknownOrder(
  s: PaymentStack,
  user: string,
  sku: string,
  lostMs = 400,
): Promise<{ orderId: string; token: string; key: string }> {
  const o = await s.buy(user, sku);
  await s.control('POST', '/_control/faults', {
    op: 'charge',
    kind: 'DELAY_RESPONSE',
    merchant_order: o.orderId,
    ms: lostMs,
  });
  const paid = await s.pay(o.token, o.orderId);
  if (paid.body?.status !== 'UNKNOWN') throw new Error(`expected UNKNOWN, got ${paid.status} ${paid.text}`);
  return o;
}

/** Waits for a condition on state (never a bare sleep): polls until it holds or the time is up. */
export async function eventually<T>(
  probe: () => Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs = 5_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (accept(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last value ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
