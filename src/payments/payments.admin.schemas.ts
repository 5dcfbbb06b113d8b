import { Type } from 'typebox';
import { ADMIN_AUTH, jsonAnswer, nullable, PARAM_ERRORS, problemAnswers, stringEnum } from '../platform/openapi.ts';
import {
  AT_EXAMPLE,
  EFFECTS,
  ORDER_ID_EXAMPLE,
  PAID_ORDER_EXAMPLE,
  OrderIdParams,
  OrderStatusSchema,
  OrderView,
  TimelineEntrySchema,
} from '../orders/index.ts';
import { NOTIFICATION_KINDS } from './payments.schemas.ts';
import { PROVIDERS } from '../platform/provider.config.ts';

// The admin views the payments module serves: one SKU's outcomes, one order with its timeline,
// notifications, notes and journal.

export const SkuOutcomes = Type.Object(
  {
    statuses: Type.Record(Type.String(), Type.Integer(), { description: 'order count by status' }),
    notification_effects: Type.Record(Type.String(), Type.Integer(), { description: 'notification count by effect' }),
  },
  { additionalProperties: false },
);

export const skuOutcomesSchema = {
  operationId: 'getSkuOutcomes',
  summary: 'Order statuses and notification effects of one SKU',
  description: 'For operators and the simulation.',
  tags: ['admin'],
  params: Type.Object({ sku: Type.String({ minLength: 1, maxLength: 64, examples: ['tee-black-m'] }) }),
  response: {
    200: jsonAnswer('Counts', SkuOutcomes, {
      example: { statuses: { PAID: 7, CANCELLED: 2 }, notification_effects: { PAID: 7 } },
    }),
    ...problemAnswers([...PARAM_ERRORS, ...ADMIN_AUTH]),
  },
};

const NotificationRow = Type.Object(
  {
    notify_id: Type.String(),
    provider: nullable(
      stringEnum(PROVIDERS, {
        description: 'the provider whose route received it (null: recorded before migration 180)',
      }),
    ),
    kind: stringEnum(NOTIFICATION_KINDS),
    amount: Type.Integer(),
    txn: nullable(Type.String()),
    effect: stringEnum(EFFECTS),
    needs_attention: Type.Boolean(),
    received_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

// Issue 48 (h3), the audit trail in the admin order view: an operator action's tenant and reason.
const OperatorAuditFields = {
  operator_tenant: Type.Optional(Type.String({ description: "the operator's tenant (their token's `tid`)" })),
  operator_reason: Type.Optional(
    Type.String({
      description: 'why the operator acted, in their words (required for refund, cancel and return since issue 48)',
    }),
  ),
};

/** A transition, or an operator's action (issue 36: `action` and the operator's `sub`; from = to, no transition). */
const AdminTimelineEntry = Type.Object(
  {
    ...TimelineEntrySchema.properties,
    action: Type.Optional(stringEnum(['refund', 'cancel', 'ack', 'retry', 'resolve', 'return'] as const)),
    operator: Type.Optional(Type.String({ description: "the operator's sub" })),
    ...OperatorAuditFields,
  },
  { additionalProperties: false },
);

export const AdminOrderView = Type.Object(
  {
    ...OrderView.properties,
    user_id: Type.String(),
    payment: Type.Object(
      {
        provider: nullable(
          stringEnum(PROVIDERS, {
            description:
              'the provider the payment was sent to, recorded by the pay; every later query, close, refund and notification of the order is judged against it (null: never sent, or paid before this was recorded)',
          }),
        ),
        provider_payment_id: nullable(
          Type.String({
            description:
              "the provider's own payment id once learnt (a Stripe PaymentIntent `pi_…`, an Alipay `trade_no`, the fake channel's txn); it settles this order only",
          }),
        ),
      },
      { additionalProperties: false, description: 'where the order’s money is (issue 48)' },
    ),
    attention: nullable(Type.String({ description: 'a note for a person when the order cannot converge on its own' })),
    recovery_attempts: Type.Integer(),
    timeline: Type.Array(AdminTimelineEntry, {
      description: "transitions and operators' actions, in the order they happened",
    }),
    notifications: Type.Array(NotificationRow),
    journal: Type.Array(
      Type.Object(
        {
          step: Type.String(),
          direction: stringEnum(['do', 'undo'] as const),
          status: stringEnum(['STARTED', 'DONE', 'REFUSED', 'FAILED', 'UNKNOWN'] as const),
          key: Type.String({ description: 'the idempotency key the step sent its provider' }),
          receipt: Type.Optional(Type.String()),
          error: Type.Optional(Type.String()),
          at: Type.String({ format: 'date-time' }),
        },
        { additionalProperties: false },
      ),
      { description: "the after-PAID saga's journal (seed 002): every step attempt, oldest first" },
    ),
  },
  { additionalProperties: false },
);

export const adminOrderSchema = {
  operationId: 'adminGetOrder',
  summary: 'An order with its timeline, notifications and saga journal',
  description: 'Any order of the admin’s tenant.',
  tags: ['admin'],
  params: OrderIdParams,
  response: {
    200: jsonAnswer('The order', AdminOrderView, {
      example: {
        ...PAID_ORDER_EXAMPLE,
        user_id: 'alice',
        payment: { provider: 'stripe', provider_payment_id: 'pi_3QxYz2LkdIwHu7ix0aBcDeFg' },
        attention: null,
        recovery_attempts: 0,
        timeline: [
          { from: null, to: 'CREATED', version: 1, reason: 'create', at: AT_EXAMPLE },
          { from: 'CREATED', to: 'PAYING', version: 2, reason: 'pay', at: AT_EXAMPLE },
          { from: 'PAYING', to: 'PAID', version: 3, reason: 'charge', at: AT_EXAMPLE },
          {
            from: 'PAID',
            to: 'PAID',
            version: 3,
            reason: 'retry',
            at: AT_EXAMPLE,
            action: 'retry',
            operator: 'ops-anna',
          },
        ],
        notifications: [
          {
            notify_id: 'evt_1QxYz2LkdIwHu7ix',
            provider: 'stripe',
            kind: 'CHARGED',
            amount: 1990,
            txn: 'pi_3QxYz2LkdIwHu7ix0aBcDeFg',
            effect: 'PAID',
            needs_attention: false,
            received_at: AT_EXAMPLE,
          },
        ],
        journal: [
          {
            step: 'fulfil',
            direction: 'do',
            status: 'DONE',
            key: `${ORDER_ID_EXAMPLE}/fulfil`,
            receipt: 'ful_3b9e',
            at: AT_EXAMPLE,
          },
        ],
      },
    }),
    ...problemAnswers([...PARAM_ERRORS, ...ADMIN_AUTH, 'ORDER_NOT_FOUND']),
  },
};

export { OrderStatusSchema };
