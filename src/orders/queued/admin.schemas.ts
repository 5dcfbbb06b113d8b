import { Type } from 'typebox';
import { ADMIN_AUTH, BODY_ERRORS, jsonAnswer, problemAnswers } from '../../platform/openapi.ts';

export const stockDrainSchema = {
  operationId: 'drainStock',
  summary: 'Run the queued-order stock pump now (operator)',
  description:
    'Relays stock requests, applies them in batches, and brings the results back, until nothing is left. The background loop of `start` does the same every 100 ms.',
  tags: ['admin'],
  response: {
    200: jsonAnswer(
      'What the passes did',
      Type.Object(
        { requests: Type.Integer(), applied: Type.Integer(), results: Type.Integer(), resent: Type.Integer() },
        { additionalProperties: false },
      ),
      {
        example: { requests: 40, applied: 40, results: 40, resent: 0 },
      },
    ),
    ...problemAnswers([...BODY_ERRORS, ...ADMIN_AUTH]),
  },
};

const Parked = Type.Object(
  {
    side: Type.String(),
    key: Type.String(),
    order_id: Type.String(),
    event_type: Type.String(),
    error: Type.Union([Type.String(), Type.Null()]),
    at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { additionalProperties: false },
);

export const stockParkedSchema = {
  operationId: 'listParkedStock',
  summary: 'Stock requests and results parked for an operator (operator)',
  description:
    'Unknown event types on either side of the queued-order path are parked with their error, never acked away.',
  tags: ['admin'],
  response: {
    200: jsonAnswer('Everything parked', Type.Object({ parked: Type.Array(Parked) }, { additionalProperties: false }), {
      example: { parked: [] },
    }),
    ...problemAnswers(ADMIN_AUTH),
  },
};
