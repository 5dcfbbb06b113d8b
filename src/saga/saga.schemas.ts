import { Type } from 'typebox';
import { ADMIN_AUTH, jsonAnswer, problemAnswers } from '../platform/openapi.ts';
import { AT_EXAMPLE, ORDER_ID_EXAMPLE, OrderStatusSchema } from '../orders/index.ts';

const AttentionList = Type.Object(
  {
    orders: Type.Array(
      Type.Object(
        {
          order_id: Type.String(),
          status: OrderStatusSchema,
          reason: Type.String({ description: 'the note the decider or recovery left, or the saga past its deadline' }),
          since: Type.String({
            format: 'date-time',
            description: 'when the note was first written (or the deadline passed)',
          }),
          attempts: Type.Integer({ description: "recovery's (or the saga's) attempts so far" }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const attentionSchema = {
  operationId: 'adminAttention',
  summary: 'Orders that need a person',
  description:
    "The token's tenant: orders with a note for a person not yet acknowledged (`POST /v1/admin/attention/{id}/ack`) about the order as it is now (an order that converged since is not listed), and fulfilments or compensations past their deadline (FLASHPAY_COMPENSATION_DEADLINE_MS, docs/saga.md).",
  tags: ['admin'],
  response: {
    200: jsonAnswer('The orders', AttentionList, {
      example: {
        orders: [
          {
            order_id: ORDER_ID_EXAMPLE,
            status: 'COMPENSATION_PENDING',
            reason: 'saga COMPENSATING past its deadline',
            since: AT_EXAMPLE,
            attempts: 4,
          },
        ],
      },
    }),
    ...problemAnswers(ADMIN_AUTH),
  },
};
