import { Type } from 'typebox';
import type { Executor } from '../platform/db.ts';
import { nullable, stringEnum } from '../platform/openapi.ts';
import { UNFINISHED_STATUSES, type Order, type OrderStatus } from '../orders/index.ts';
import { findLastAttempt } from './recovery.attempts.ts';

// Issue 52: "why is this order stuck?" as the admin order view answers it.

/** Statuses a recovery pass claims; PENDING and RELEASING wait for the stock service instead. */
const RECOVERED: ReadonlySet<OrderStatus> = new Set(['PAYING', 'UNKNOWN', 'REFUNDING']);

export const RecoveryState = nullable(
  Type.Object(
    {
      by: stringEnum(['recovery', 'stock_service'] as const, {
        description:
          'who moves it on: recovery passes (PAYING, UNKNOWN, REFUNDING: the provider is asked again) or the stock service (PENDING, RELEASING: its request is re-sent)',
      }),
      attempts: Type.Integer({ description: 'recovery passes that tried it and left it unfinished' }),
      last_error: nullable(
        Type.String({
          description: 'what the provider or the database said at the last attempt (at most 2000 characters)',
        }),
      ),
      last_attempt_at: nullable(Type.String({ format: 'date-time' })),
      next_attempt_at: nullable(
        Type.String({
          format: 'date-time',
          description:
            'when a pass will next take it: its backoff, a PAYING order once it is stale, else one pass interval after the last attempt (null: not recovery’s)',
        }),
      ),
    },
    { additionalProperties: false },
  ),
  {
    description:
      'an unfinished order’s convergence (issue 52): who moves it, how many recovery passes tried it, what was last said, when the next pass will; null once the order is finished',
  },
);

export interface RecoveryTiming {
  /** FLASHPAY_RECOVERY_INTERVAL_MS: passes of `start` run this often. */
  intervalMs: number;
  /** FLASHPAY_STALE_AFTER_MS: a PAYING order is claimed only this long after its last transition. */
  staleAfterMs: number;
  now: Date;
}

const latest = (dates: Array<Date | null | undefined>): Date | null =>
  dates.reduce<Date | null>((a, d) => (d && (!a || d > a) ? d : a), null);

/** The `recovery` block of `GET /v1/admin/orders/{id}`; read in the view's own snapshot (`db`). */
export async function recoveryStateOf(db: Executor, order: Order, attempts: number, timing: RecoveryTiming) {
  if (!UNFINISHED_STATUSES.has(order.status)) return null;
  if (!RECOVERED.has(order.status))
    return { by: 'stock_service' as const, attempts, last_error: null, last_attempt_at: null, next_attempt_at: null };
  const last = await findLastAttempt(db, order.orderId);
  const afterLast = last ? new Date(last.attemptedAt.getTime() + timing.intervalMs) : null;
  const stale = order.status === 'PAYING' ? new Date(order.updatedAt.getTime() + timing.staleAfterMs) : null;
  const next = latest([last?.nextAttemptAt, afterLast, stale]) ?? new Date(timing.now.getTime() + timing.intervalMs);
  return {
    by: 'recovery' as const,
    attempts,
    last_error: last?.lastError ?? null,
    last_attempt_at: last?.attemptedAt.toISOString() ?? null,
    next_attempt_at: next.toISOString(),
  };
}
