import { mutant } from '../platform/mutations.ts';
import { businessMetrics } from '../platform/business-metrics.ts';
import { AppError } from '../platform/errors.ts';
import { verifySignature, SIGNATURE_HEADER } from '../platform/signature.ts';
import {
  EFFECTS,
  findOrderForPayment,
  noteForPerson,
  type AppliedEvent,
  type Effect,
  type Order,
} from '../orders/index.ts';
import { inTx } from '../platform/db.ts';
import { providerOfTenant, type ProviderName } from '../platform/provider.config.ts';
import { recordNotificationOnce, recordedEffect, type NotificationRecord } from './payments.repo.ts';
import type { PaymentDeps } from './payments.deps.ts';
import type { Tx } from '../platform/db.ts';
import { answerEvent } from './answers.ts';
import { followUp, recordAnswer } from './settle.ts';

const KINDS = new Set(['CHARGED', 'DECLINED', 'REFUNDED']);
const MAX_ID_LENGTH = 128;

function text(value: unknown, field: string, optional = false): string | null {
  if (optional && (value === undefined || value === null)) return null;
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_ID_LENGTH)
    throw new AppError('VALIDATION', `${field} must be a string of 1..${MAX_ID_LENGTH} characters`);
  return value;
}

/** Validation after the signature check: a forged body is refused as forged, not as malformed. */
export function parseNotification(body: unknown, provider: ProviderName): NotificationRecord {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new AppError('VALIDATION', 'body must be a JSON object');
  const b = body as Record<string, unknown>;
  if (typeof b.kind !== 'string' || !KINDS.has(b.kind))
    throw new AppError('VALIDATION', 'kind must be one of CHARGED, DECLINED, REFUNDED');
  if (typeof b.amount !== 'number' || !Number.isSafeInteger(b.amount) || b.amount < 0)
    throw new AppError('VALIDATION', 'amount must be a non-negative integer (minor units)');
  return {
    provider,
    notifyId: text(b.notify_id, 'notify_id') ?? '',
    merchantOrder: text(b.merchant_order, 'merchant_order') ?? '',
    kind: b.kind as NotificationRecord['kind'],
    amount: b.amount,
    txn: text(b.txn, 'txn', true),
  };
}

export function checkSignature(
  secret: string,
  header: string | string[] | undefined,
  rawBody: string,
  toleranceSeconds: number,
  nowSeconds: number,
): void {
  const check = verifySignature(
    secret,
    typeof header === 'string' ? header : undefined,
    rawBody,
    toleranceSeconds,
    nowSeconds,
  );
  if (!check.ok) throw new AppError('BAD_SIGNATURE', check.reason);
}

export { SIGNATURE_HEADER };

export interface NotificationResult {
  effect: Effect;
  /** Set on a copy of a notification recorded before: what the first copy did. */
  recorded_effect?: Effect;
}

/**
 * Applies one notification through the decider, like every other provider answer, and records it
 * with its effect in the same transaction: a storage error rolls both back and the provider
 * retries. A copy of a recorded (provider, notify_id) is answered from the record (DUPLICATE)
 * without taking the order's lock or adding a row. A notification that is not the order's to give
 * (another provider's, another currency, a payment id of another order: `refusal`) is recorded with
 * that effect and a note for a person, and the order is left as it was. A refund the effect asks
 * for is sent after that commit.
 */
export async function handleNotification(deps: PaymentDeps, n: NotificationRecord): Promise<NotificationResult> {
  // Both reads at once (two pooled connections): the notification path gains no round trip.
  const [recorded, { order, boundTo }] = await Promise.all([
    recordedEffect(deps.db, n.provider, n.notifyId),
    findOrderForPayment(deps.db, n.merchantOrder, n.provider, n.txn),
  ]);
  if (recorded) return replay(n, recorded);
  // Read without the order's lock: its tenant never changes and its provider is set once, by the
  // pay's PAYING transition, to its tenant's provider; a payment id bound concurrently to another
  // order makes one of the two transitions fail (orders_provider_payment) and the provider retry.
  const refused = order ? refusal(deps, n, order, boundTo) : undefined;
  if (refused && !mutant('payments.notification.refusal', refused.effect)) return refuse(deps, n, refused);
  const answer = answerEvent('callback', n.kind, `callback ${n.notifyId}`, n.amount, n.txn);
  let result: NotificationResult = { effect: 'IGNORED' };
  const complete = async (tx: Tx, applied: AppliedEvent) => {
    // The order's row lock orders concurrent copies; a copy that lost the race meets the record.
    const effect = asEffect(applied.outcome);
    const recorded = await recordNotificationOnce(tx, n, effect, applied.attention !== undefined, deps.clock.now());
    result = recorded.inserted ? { effect } : { effect: 'DUPLICATE', recorded_effect: recorded.first };
  };
  // The provider notifies as it answers the charge, so a notification meets its pay's last commit:
  // it joins the pays' group commit (the next group, never its pay's own) instead of a durable
  // commit of its own that waits for the pay's on the order's row lock.
  const item = { orderId: n.merchantOrder, answer, complete };
  const applied = await (deps.payCommits?.record(item) ?? recordAnswer(deps, item.orderId, answer, complete));
  await followUp(deps, n.merchantOrder, applied);
  businessMetrics.notifications.inc({ kind: n.kind, effect: result.effect });
  return result;
}

/** The provider an order's money is at: the one recorded by its pay, else its tenant's (orders before migration 180). */
export function providerOfOrder(deps: Pick<PaymentDeps, 'providers'>, order: Order): ProviderName {
  if (order.paymentProvider) return order.paymentProvider as ProviderName;
  return deps.providers ? providerOfTenant(deps.providers, order.tenantId) : 'fake';
}

interface Refusal {
  effect: Extract<Effect, 'WRONG_PROVIDER' | 'CURRENCY_MISMATCH' | 'PAYMENT_ID_IN_USE'>;
  note: string;
}

/** Why this notification is not the order's to settle (issue 48); undefined when it is. */
function refusal(
  deps: PaymentDeps,
  n: NotificationRecord,
  order: Order,
  boundTo: string | undefined,
): Refusal | undefined {
  const owner = providerOfOrder(deps, order);
  const what = `a ${n.kind} notification from ${n.provider} (${n.notifyId})`;
  if (n.provider !== owner)
    return {
      effect: 'WRONG_PROVIDER',
      note: `WRONG_PROVIDER: ${what} for an order paid through ${owner}; nothing changed`,
    };
  const expected = n.provider === 'stripe' ? deps.providers?.stripe.currency : undefined;
  if (n.currency !== undefined && expected !== undefined && n.currency.toLowerCase() !== expected)
    return {
      effect: 'CURRENCY_MISMATCH',
      note: `CURRENCY_MISMATCH: ${what} in ${n.currency.slice(0, 8)}, the order is in ${expected}; nothing changed`,
    };
  if (boundTo !== undefined && boundTo !== order.orderId)
    return {
      effect: 'PAYMENT_ID_IN_USE',
      note: `PAYMENT_ID_IN_USE: ${what} names payment ${n.txn ?? ''}, which settled order ${boundTo}; nothing changed`,
    };
  return undefined;
}

/**
 * Records a refused notification with its effect and leaves a note for a person on the order it
 * named, in one transaction; the order's status, stock and ledger are untouched. The provider is
 * answered as for any processed notification (200), so it stops resending what can never apply.
 */
async function refuse(deps: PaymentDeps, n: NotificationRecord, refused: Refusal): Promise<NotificationResult> {
  const result = await inTx(deps.db, async (tx) => {
    const recorded = await recordNotificationOnce(tx, n, refused.effect, true, deps.clock.now());
    if (!recorded.inserted) return { effect: 'DUPLICATE' as const, recorded_effect: recorded.first };
    await noteForPerson(tx, n.merchantOrder, refused.note);
    return { effect: refused.effect };
  });
  businessMetrics.notifications.inc({ kind: n.kind, effect: result.effect });
  return result;
}

function replay(n: NotificationRecord, recorded: Effect): NotificationResult {
  businessMetrics.notifications.inc({ kind: n.kind, effect: 'DUPLICATE' });
  return { effect: 'DUPLICATE', recorded_effect: recorded };
}

// Through a callback the decider answers with an effect; anything else (a pending close) is IGNORED.
function asEffect(outcome: string): Effect {
  return (EFFECTS as readonly string[]).includes(outcome) ? (outcome as Effect) : 'IGNORED';
}
