import type { Tx } from '../platform/db.ts';
import { invariant } from '../platform/errors.ts';
import { applyOrderEvent, trySetFulfilment, type Order, type OrderEvent } from '../orders/index.ts';
import type { FulfilmentClient } from './fulfilment.client.ts';
import { compensationRefundKey, type CompensationRefunds } from './refund.seam.ts';
import type { Flow, StepResult } from './saga.runner.ts';
import { sagaMetrics } from './saga.metrics.ts';

// Seed 002 on an order: the unit (the seat) was confirmed and the money taken by pay — the first
// two steps, done before the saga begins and journalled when it starts — then the fulfilment at a
// third party (the ticket). Refused for good: refund first, then the unit back on sale.

export interface OrderFlowContext {
  order: Order;
  now: () => Date;
  refunds: CompensationRefunds;
  fulfilment: FulfilmentClient;
}

async function apply(tx: Tx, ctx: OrderFlowContext, event: OrderEvent, accept: readonly string[]): Promise<string> {
  const applied = await applyOrderEvent(tx, ctx.order.orderId, event, ctx.now());
  invariant(
    accept.includes(applied.outcome),
    `${event.type} on ${ctx.order.orderId}: ${applied.outcome} (order ${applied.order?.status})`,
  );
  return applied.outcome;
}

export const ORDER_FLOW: Flow<OrderFlowContext> = {
  name: 'order-after-paid',
  betweenUndos: 'saga.between-undos',
  steps: [
    {
      name: 'reserve',
      forward: { key: (_id, ctx) => ctx.order.reservationKey },
      undo: {
        key: (id) => `${id}/release`,
        // Local: the DONE row, the unit back on sale and COMPENSATED in one transaction. The decider
        // refuses it unless the refund was confirmed first (the order is COMPENSATING again).
        apply: async (tx, ctx) => {
          if ((await apply(tx, ctx, { type: 'COMPENSATION_RELEASE' }, ['COMPENSATED', 'DUPLICATE'])) === 'COMPENSATED')
            sagaMetrics.completed.inc();
        },
      },
    },
    {
      name: 'charge',
      forward: { key: (id) => id },
      undo: {
        key: (id) => compensationRefundKey(id),
        call: (ctx, key) => ctx.refunds.refund(ctx.order, key),
        query: (ctx, key) => ctx.refunds.query(ctx.order, key),
        afterCall: 'saga.after-refund-call',
        apply: async (tx, ctx, result: StepResult) => {
          const ok = result.status === 'DONE';
          const cause = ok
            ? `refund ${'receipt' in result ? (result.receipt ?? '') : ''}`
            : `refund ${'error' in result ? result.error : result.status}`;
          await apply(tx, ctx, { type: 'COMPENSATION_REFUND', ok, cause }, [
            'COMPENSATING',
            'COMPENSATION_PENDING',
            'DUPLICATE',
          ]);
        },
      },
    },
    {
      name: 'fulfil',
      forward: {
        key: (id) => `${id}/fulfil`,
        call: (ctx, key) => ctx.fulfilment.fulfil(key, ctx.order.orderId),
        query: (ctx, key) => ctx.fulfilment.query(key),
        afterCall: 'saga.after-fulfil-call',
        apply: async (tx, ctx, result) => {
          if (result.status === 'DONE')
            await trySetFulfilment(
              tx,
              ctx.order.orderId,
              'FULFILLED',
              'receipt' in result ? (result.receipt ?? null) : null,
            );
          if (result.status !== 'REFUSED') return;
          await trySetFulfilment(tx, ctx.order.orderId, 'REFUSED', null);
          if (
            (await apply(tx, ctx, { type: 'FULFILMENT_REFUSED', cause: 'provider refused' }, [
              'COMPENSATING',
              'DUPLICATE',
            ])) === 'COMPENSATING'
          )
            sagaMetrics.started.inc();
        },
      },
    },
  ],
};
