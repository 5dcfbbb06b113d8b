import { businessMetrics } from '../platform/business-metrics.ts';
import { inTx } from '../platform/db.ts';
import { AppError } from '../platform/errors.ts';
import { verifySignature, SIGNATURE_HEADER } from '../platform/signature.ts';
import { applyCharged, applyNotCharged, applyRefunded, type Applied, type Effect } from './effects.ts';
import { insertNotification, noteAttention, type NotificationRecord } from './payments.repo.ts';
import type { PaymentDeps } from './payments.deps.ts';
import { sendRefund } from './refund.service.ts';

const KINDS = new Set(['CHARGED', 'DECLINED', 'REFUNDED']);
const MAX_ID_LENGTH = 128;

function text(value: unknown, field: string, optional = false): string | null {
  if (optional && (value === undefined || value === null)) return null;
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_ID_LENGTH) throw new AppError('VALIDATION', `${field} must be a string of 1..${MAX_ID_LENGTH} characters`);
  return value;
}

/** Validation after the signature check: a forged body is refused as forged, not as malformed. */
export function parseNotification(body: unknown): NotificationRecord {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new AppError('VALIDATION', 'body must be a JSON object');
  const b = body as Record<string, unknown>;
  if (typeof b.kind !== 'string' || !KINDS.has(b.kind)) throw new AppError('VALIDATION', 'kind must be one of CHARGED, DECLINED, REFUNDED');
  if (typeof b.amount !== 'number' || !Number.isSafeInteger(b.amount) || b.amount < 0) throw new AppError('VALIDATION', 'amount must be a non-negative integer (minor units)');
  return {
    notifyId: text(b.notify_id, 'notify_id') ?? '',
    merchantOrder: text(b.merchant_order, 'merchant_order') ?? '',
    kind: b.kind as NotificationRecord['kind'],
    amount: b.amount,
    txn: text(b.txn, 'txn', true),
  };
}

export function checkSignature(secret: string, header: string | string[] | undefined, rawBody: string, toleranceSeconds: number, nowSeconds: number): void {
  const check = verifySignature(secret, typeof header === 'string' ? header : undefined, rawBody, toleranceSeconds, nowSeconds);
  if (!check.ok) throw new AppError('BAD_SIGNATURE', check.reason);
}

export { SIGNATURE_HEADER };

/**
 * Applies one notification through the same state machine as every other source, and records it
 * with its effect in the same transaction: a storage error rolls both back and the provider retries.
 */
export async function handleNotification(deps: PaymentDeps, n: NotificationRecord): Promise<Effect> {
  const result = await inTx(deps.db, async (tx): Promise<Applied> => {
    const now = deps.clock.now();
    const cause = `callback ${n.notifyId}`;
    const applied =
      n.kind === 'CHARGED'
        ? await applyCharged(tx, n.merchantOrder, n.amount, cause, now)
        : n.kind === 'DECLINED'
          ? await applyNotCharged(tx, n.merchantOrder, `${cause} declined`, now)
          : await applyRefunded(tx, n.merchantOrder, n.amount, cause, now);
    await insertNotification(tx, n, applied.effect, applied.attention !== undefined, now);
    if (applied.attention && applied.effect !== 'UNKNOWN_ORDER') await noteAttention(tx, n.merchantOrder, `${n.kind} ${n.notifyId}: ${applied.attention}`);
    return applied;
  });
  businessMetrics.notifications.inc({ kind: n.kind, effect: result.effect });
  if (result.refund) await sendRefund(deps, n.merchantOrder);
  return result.effect;
}
