import type { Executor } from '../../platform/db.ts';
import type { OrderStatus } from '../decide/states.ts';

// The operators' actions on an order (issue 36, table order_operator_actions, migration 170): each
// with the operator's `sub`, the order's status and version after it. The admin order view shows
// them in the timeline beside the transitions. Issue 48 (migration 182): the operator's tenant and
// reason too (required for refund, cancel and return), and the table refuses UPDATE and DELETE.

export const OPERATOR_ACTIONS = ['refund', 'cancel', 'ack', 'retry', 'resolve', 'return'] as const;
export type OperatorAction = (typeof OPERATOR_ACTIONS)[number];

export interface OperatorActionEntry {
  action: OperatorAction;
  operator: string;
  /** The operator's tenant (their token's `tid`). */
  operatorTenant: string | null;
  /** Why (issue 48): required for the actions that move money or units. */
  reason: string | null;
  status: OrderStatus;
  version: number;
  note: string | null;
  at: Date;
}

/** Written in the transaction of the action's effect where there is one, so both or neither commit. */
export async function recordOperatorAction(
  db: Executor,
  orderId: string,
  entry: Omit<OperatorActionEntry, 'note' | 'reason' | 'operatorTenant'> & {
    note?: string | null;
    reason?: string | null;
    operatorTenant: string;
  },
): Promise<void> {
  await db.query(
    `INSERT INTO order_operator_actions (order_id, action, operator, operator_tenant, reason, status, version, note, at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      orderId,
      entry.action,
      entry.operator,
      entry.operatorTenant,
      entry.reason ?? null,
      entry.status,
      entry.version,
      entry.note?.slice(0, 500) ?? null,
      entry.at,
    ],
  );
}

export async function listOperatorActions(db: Executor, orderId: string): Promise<OperatorActionEntry[]> {
  const result = await db.query<OperatorActionEntry>(
    `SELECT action, operator, operator_tenant AS "operatorTenant", reason, status, version, note, at
     FROM order_operator_actions WHERE order_id = $1 ORDER BY id`,
    [orderId],
  );
  return result.rows;
}
