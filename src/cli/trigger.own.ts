import { randomBytes, randomUUID } from 'node:crypto';
import type { Trigger } from './specs/index.ts';
import { act } from './trigger.act.ts';
import { call, type Target } from './trigger.target.ts';

// `flashpay trigger WHAT` without --order: an order of its own, taken as far as WHAT needs, like
// `stripe trigger` makes its fixtures. Its SKU and buyer say where they came from.
export const OWN_BUYER = 'trigger-buyer';
const OWN_PRICE_MINOR = 500;
// How long a step may take to show (a notification to settle an order) before trigger says so.
const SETTLE_TIMEOUT_MS = 30_000;
const POLL_MS = 100;

export interface OwnOrder {
  orderId: string;
  sku: string;
  buyer: string;
  /** What the order's pay answered, for the kinds that pay it (declined, lost-reply). */
  payAnswer: string | undefined;
  provider: unknown;
}

const statusOf = async (t: Target, orderId: string): Promise<string> =>
  (await call(`${t.api}/v1/admin/orders/${encodeURIComponent(orderId)}`, { token: t.adminToken })).status as string;

async function until(t: Target, orderId: string, wanted: string): Promise<void> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  for (let status = await statusOf(t, orderId); status !== wanted; status = await statusOf(t, orderId)) {
    if (Date.now() > deadline)
      throw new Error(
        `${orderId} is ${status}, not ${wanted}, after ${SETTLE_TIMEOUT_MS} ms: is the stack's relay running?`,
      );
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

async function makeOrder(what: Trigger, t: Target, buyerToken: string): Promise<{ orderId: string; sku: string }> {
  const sku = `trigger-${what}-${randomBytes(3).toString('hex')}`;
  await call(`${t.api}/v1/admin/skus`, {
    token: t.adminToken,
    body: { sku, name: `flashpay trigger ${what} (test fixture)`, price: OWN_PRICE_MINOR, stock: 1 },
  });
  const order = await call(`${t.api}/v1/orders`, { token: buyerToken, body: { sku }, idempotencyKey: randomUUID() });
  return { orderId: order.order_id as string, sku };
}

const pay = async (t: Target, orderId: string, buyerToken: string): Promise<string> =>
  (
    await call(`${t.api}/v1/orders/${encodeURIComponent(orderId)}/pay`, {
      token: buyerToken,
      body: {},
      idempotencyKey: randomUUID(),
    })
  ).status as string;

/**
 * A lost reply whose notification is held too, so the pay really answers UNKNOWN (issue 52: with
 * only the reply delayed, the fake channel's notification, sent at once, settled the order PAID
 * before the pay's timeout). The channel holds every notification while this one pay runs; the
 * others are released as soon as it answered, this order's stays held, so recovery's query (after
 * FLASHPAY_STALE_AFTER_MS) is what makes it PAID.
 */
async function lostReply(t: Target, orderId: string, buyerToken: string): Promise<{ answer: string; armed: unknown }> {
  const control = (path: string, body?: unknown) => call(`${t.channel}${path}`, { token: t.controlToken, body });
  const before = await control('/_control/callbacks');
  await control('/_control/callbacks', { ...before, mode: 'HOLD' });
  try {
    const armed = await act('lost-reply', orderId, t);
    return { answer: await pay(t, orderId, buyerToken), armed };
  } finally {
    await control('/_control/callbacks', before);
    if (before.mode !== 'HOLD') {
      const held = (await control('/_control/callbacks/held')) as Array<{ id: string; merchant_order: string }>;
      const others = held.filter((h) => h.merchant_order !== orderId).map((h) => h.id);
      if (others.length > 0) await control('/_control/callbacks/release', { ids: others });
    }
  }
}

/** Makes the order, then WHAT happens to it; resolves with the order and what the provider said. */
export async function actOnOwnOrder(what: Trigger, t: Target): Promise<OwnOrder> {
  const buyerToken = await t.buyerToken(OWN_BUYER);
  const { orderId, sku } = await makeOrder(what, t, buyerToken);
  const own = { orderId, sku, buyer: OWN_BUYER };
  switch (what) {
    case 'charged':
      return { ...own, payAnswer: undefined, provider: await act(what, orderId, t) };
    case 'declined': {
      const provider = await act(what, orderId, t);
      return { ...own, payAnswer: await pay(t, orderId, buyerToken), provider };
    }
    case 'lost-reply': {
      const { answer, armed } = await lostReply(t, orderId, buyerToken);
      return { ...own, payAnswer: answer, provider: armed };
    }
    default:
      // refunded and the callbacks need a charge (and its notification) first.
      await act('charged', orderId, t);
      await until(t, orderId, 'PAID');
      return { ...own, payAnswer: undefined, provider: await act(what, orderId, t) };
  }
}

export { statusOf };
