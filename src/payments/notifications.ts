import { businessMetrics } from '../platform/business-metrics.ts';
import { AppError } from '../platform/errors.ts';
import { verifySignature, SIGNATURE_HEADER } from '../platform/signature.ts';
import { EFFECTS, type AppliedEvent, type Effect } from '../orders/index.ts';
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
export function parseNotification(body: unknown): NotificationRecord {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new AppError('VALIDATION', 'body must be a JSON object');
  const b = body as Record<string, unknown>;
  if (typeof b.kind !== 'string' || !KINDS.has(b.kind))
    throw new AppError('VALIDATION', 'kind must be one of CHARGED, DECLINED, REFUNDED');
  if (typeof b.amount !== 'number' || !Number.isSafeInteger(b.amount) || b.amount < 0)
    throw new AppError('VALIDATION', 'amount must be a non-negative integer (minor units)');
  return {
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
 * retries. A copy of a recorded notify_id is answered from the record (DUPLICATE) without taking
 * the order's lock or adding a row. A refund the effect asks for is sent after that commit.
 */
export async function handleNotification(deps: PaymentDeps, n: NotificationRecord): Promise<NotificationResult> {
  const recorded = await recordedEffect(deps.db, n.notifyId);
  if (recorded) return replay(n, recorded);
  const answer = answerEvent('callback', n.kind, `callback ${n.notifyId}`, n.amount);
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

function replay(n: NotificationRecord, recorded: Effect): NotificationResult {
  businessMetrics.notifications.inc({ kind: n.kind, effect: 'DUPLICATE' });
  return { effect: 'DUPLICATE', recorded_effect: recorded };
}

// Through a callback the decider answers with an effect; anything else (a pending close) is IGNORED.
function asEffect(outcome: string): Effect {
  return (EFFECTS as readonly string[]).includes(outcome) ? (outcome as Effect) : 'IGNORED';
}
