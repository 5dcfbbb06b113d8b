import { Type, type Static } from 'typebox';
import { ADMIN_AUTH, BODY_ERRORS, jsonAnswer, nullable, problemAnswers } from '../platform/openapi.ts';

export const drainSchema = {
  operationId: 'drainOutbox',
  summary: 'Deliver every pending outbox event now',
  description:
    'Events waiting out a backoff are made due first; each is attempted once more at most. 503 `UNAVAILABLE` when this process runs no relay.',
  tags: ['admin'],
  response: {
    200: jsonAnswer(
      'What this pass did',
      Type.Object({ delivered: Type.Integer(), failed: Type.Integer() }, { additionalProperties: false }),
      { example: { delivered: 12, failed: 0 } },
    ),
    ...problemAnswers(['VALIDATION', 'PAYLOAD_TOO_LARGE', ...ADMIN_AUTH]),
  },
};

const DeadEvent = Type.Object(
  {
    event_id: Type.String(),
    order_id: Type.String(),
    event_type: Type.String(),
    order_version: Type.Integer(),
    attempts: Type.Integer(),
    last_error: nullable(Type.String()),
    dead_at: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

export const deadSchema = {
  operationId: 'listDeadEvents',
  summary: 'Parked (dead) outbox events, oldest first',
  description: 'Events that ran out of attempts or have an unknown type; `redrive` puts them back in line.',
  tags: ['admin'],
  response: {
    200: jsonAnswer(
      'At most 100 events',
      Type.Object({ events: Type.Array(DeadEvent) }, { additionalProperties: false }),
      {
        example: {
          events: [
            {
              event_id: '42',
              order_id: 'ord_7c1e2b9f4a',
              event_type: 'ORDER_PAID',
              order_version: 3,
              attempts: 5,
              last_error: 'HTTP 502',
              dead_at: '2026-11-30T18:00:00.000Z',
            },
          ],
        },
      },
    ),
    ...problemAnswers(ADMIN_AUTH),
  },
};

export const RedriveBody = nullable(
  Type.Object(
    {
      event_ids: Type.Optional(Type.Array(Type.String(), { maxItems: 1000, description: 'default: every dead event' })),
    },
    { additionalProperties: false },
  ),
  { examples: [{ event_ids: ['42'] }] },
);
export type RedriveBody = Static<typeof RedriveBody>;

export const redriveSchema = {
  operationId: 'redriveDeadEvents',
  summary: 'Put dead events back in line',
  description: 'All dead events, or the listed ids, with a fresh attempt budget. The body is optional.',
  tags: ['admin'],
  body: RedriveBody,
  'x-body-optional': true,
  response: {
    200: jsonAnswer('How many', Type.Object({ redriven: Type.Integer() }, { additionalProperties: false }), {
      example: { redriven: 1 },
    }),
    ...problemAnswers([...BODY_ERRORS, ...ADMIN_AUTH]),
  },
};
