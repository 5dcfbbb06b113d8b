import { Type, type Static } from 'typebox';
import { ADMIN_AUTH, BODY_ERRORS, jsonAnswer, nullable, problemAnswers } from '../platform/openapi.ts';
import { ReconciliationReportSchema, reconciliationExample } from '../reconcile/index.ts';

export const RecoveryBody = nullable(
  Type.Object(
    {
      stale_after_ms: Type.Optional(
        Type.Integer({
          minimum: 0,
          maximum: 7 * 24 * 3600 * 1000,
          description: 'a PAYING order older than this is examined (default FLASHPAY_STALE_AFTER_MS)',
        }),
      ),
    },
    { additionalProperties: false },
  ),
  { examples: [{ stale_after_ms: 0 }] },
);
export type RecoveryBody = Static<typeof RecoveryBody>;

const RecoveryReport = Type.Object(
  {
    examined: Type.Integer(),
    resolved: Type.Record(Type.String(), Type.Integer(), {
      description: 'orders converged, by the status they reached',
    }),
    pending: Type.Integer({ description: 'unfinished orders left' }),
    still_pending: Type.Array(
      Type.Object(
        { order_id: Type.String(), status: Type.Optional(Type.String()), reason: Type.String() },
        { additionalProperties: false },
      ),
    ),
    needs_attention: Type.Array(
      Type.Object(
        { order_id: Type.String(), status: Type.String(), attention: Type.String() },
        { additionalProperties: false },
      ),
    ),
    outbox: Type.Optional(
      Type.Object({ delivered: Type.Integer(), failed: Type.Integer() }, { additionalProperties: false }),
    ),
    reconciliation: Type.Optional(ReconciliationReportSchema),
    saga: Type.Optional(
      Type.Object(
        {
          started: Type.Integer({ description: 'sagas started for PAID orders without one' }),
          examined: Type.Integer(),
          done: Type.Integer({ description: 'fulfilments completed' }),
          compensated: Type.Integer({ description: 'compensations completed' }),
          pending: Type.Array(
            Type.Object(
              { order_id: Type.String(), state: Type.String(), reason: Type.String() },
              { additionalProperties: false },
            ),
          ),
        },
        {
          additionalProperties: false,
          description: "seed 002: fulfilments and compensations advanced by this pass (an operator's pass only)",
        },
      ),
    ),
  },
  { additionalProperties: false },
);

export const recoverySchema = {
  operationId: 'runRecovery',
  summary: 'One recovery pass, outbox drain and reconciliation',
  description:
    'Converges UNKNOWN, stale PAYING and REFUNDING orders (query, close, refund with the same key), cancels abandoned CREATED orders, advances fulfilment sagas and compensations and drains the outbox (an operator’s pass only), then reconciles. Safe to repeat. The body is optional.',
  tags: ['admin'],
  body: RecoveryBody,
  'x-body-optional': true,
  response: {
    200: jsonAnswer('What the pass did', RecoveryReport, {
      example: {
        examined: 2,
        resolved: { PAID: 1, FAILED: 1 },
        pending: 0,
        still_pending: [],
        needs_attention: [],
        outbox: { delivered: 2, failed: 0 },
        reconciliation: reconciliationExample,
      },
    }),
    ...problemAnswers([...BODY_ERRORS, ...ADMIN_AUTH]),
  },
};
