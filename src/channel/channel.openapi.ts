import type { SwaggerOptions } from '@fastify/swagger';
import { Type } from 'typebox';
import { jsonAnswer, nullable, stringEnum } from '../platform/openapi.ts';
import { fulfilBody } from './channel.fixtures.schemas.ts';
import { chargeBody, closeBody, queryParams, refundBody, statementQuery } from './channel.schemas.ts';
import { AT, MO, problems, withExample } from './channel.openapi.blocks.ts';
import { controlSchemas } from './channel.openapi.control.ts';

// The provider double's own OpenAPI document (its /docs): the ledger API every integration uses,
// and the control API (with `--control`) that scripts faults. Request schemas stay the JSON Schemas
// of channel.schemas.ts, which Fastify validates with; answers are declared here.

const ChargeStatus = stringEnum(['CHARGED', 'DECLINED', 'CLOSED', 'REFUNDED', 'NOT_FOUND']);
const ChargeView = Type.Object(
  {
    merchant_order: Type.String(),
    status: ChargeStatus,
    amount: Type.Optional(nullable(Type.Integer())),
    txn: Type.Optional(nullable(Type.String())),
    refund_id: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
const chargeViewExample = { merchant_order: MO, status: 'CHARGED', amount: 1990, txn: 'txn_5f0c' };

const chargeSchema = {
  operationId: 'charge',
  summary: 'Charge a merchant order',
  description:
    'Idempotent by `merchant_order`: a repeat gets the first answer. A signed notification follows at `notify_url`, retried until a 200.',
  tags: ['ledger'],
  security: [],
  body: withExample(chargeBody, {
    merchant_order: MO,
    amount: 1990,
    notify_url: 'http://127.0.0.1:8080/v1/payment-notifications',
  }),
  response: {
    200: jsonAnswer(
      'Charged or declined',
      Type.Object(
        {
          result: stringEnum(['CHARGED', 'DECLINED']),
          txn: Type.String(),
          merchant_order: Type.String(),
          amount: Type.Integer(),
          reason: Type.Optional(
            stringEnum(['INSUFFICIENT_FUNDS'], {
              description: 'a decline because the `customer` (set with `/_control/accounts`) cannot cover the amount',
            }),
          ),
        },
        { additionalProperties: false },
      ),
      {
        example: { result: 'CHARGED', txn: 'txn_5f0c', merchant_order: MO, amount: 1990 },
      },
    ),
    ...problems(['CLOSED', 'AMOUNT_MISMATCH']),
  },
};

const querySchema = {
  operationId: 'getCharge',
  summary: 'What the ledger holds for a merchant order',
  description:
    '`NOT_FOUND` when nothing was ever charged or closed; after a lost charge reply, this says whether the money moved.',
  tags: ['ledger'],
  security: [],
  params: queryParams,
  response: {
    200: jsonAnswer('The charge, or NOT_FOUND', ChargeView, { example: chargeViewExample }),
    ...problems([], false),
  },
};

const closeSchema = {
  operationId: 'close',
  summary: 'Close a merchant order that was never charged',
  description:
    '`CLOSED` when nothing was charged (every later charge of it is refused), otherwise the current status, unchanged.',
  tags: ['ledger'],
  security: [],
  body: withExample(closeBody, { merchant_order: MO }),
  response: {
    200: jsonAnswer('The status after the close', ChargeView, { example: { merchant_order: MO, status: 'CLOSED' } }),
    ...problems([]),
  },
};

const refundSchema = {
  operationId: 'refund',
  summary: 'Refund a charge in full',
  description: 'Idempotent by `refund_key`. Full amount only.',
  tags: ['ledger'],
  security: [],
  body: withExample(refundBody, { merchant_order: MO, refund_key: `rf-${MO}`, amount: 1990 }),
  response: {
    200: jsonAnswer(
      'Refunded',
      Type.Object(
        {
          result: stringEnum(['REFUNDED']),
          refund_id: Type.String(),
          merchant_order: Type.String(),
          amount: Type.Integer(),
          txn: nullable(Type.String()),
        },
        { additionalProperties: false },
      ),
      { example: { result: 'REFUNDED', refund_id: 're_77a1', merchant_order: MO, amount: 1990, txn: 'txn_5f0c' } },
    ),
    ...problems(['NOT_CHARGED', 'ALREADY_REFUNDED', 'AMOUNT_MISMATCH', 'REFUND_KEY_REUSED']),
  },
};

const statementSchema = {
  operationId: 'getStatement',
  summary: 'Every money movement, oldest first, and the net',
  description:
    'What reconciliation compares the orders with; `merchant_order` narrows it to one. With `after` and/or `limit` (an extension): the lines after that cursor, oldest first, at most `limit` (default 1000), `net` of those lines, and `next`, the cursor to resume from. A line gets its place when it commits, so a cursor never skips a line that commits later. Without them: the whole statement, as before.',
  tags: ['ledger'],
  security: [],
  querystring: statementQuery,
  response: {
    200: jsonAnswer(
      'The statement',
      Type.Object(
        {
          lines: Type.Array(
            Type.Object(
              {
                type: stringEnum(['CHARGE', 'REFUND']),
                merchant_order: Type.String(),
                amount: Type.Integer(),
                ref: Type.String(),
                at: Type.String({ format: 'date-time' }),
              },
              { additionalProperties: false },
            ),
          ),
          net: Type.Integer({ description: 'charges minus refunds' }),
          next: Type.Optional(
            Type.String({
              description: 'paged answers only: the `after` of the next page (unchanged when nothing is new)',
            }),
          ),
        },
        { additionalProperties: false },
      ),
      {
        example: { lines: [{ type: 'CHARGE', merchant_order: MO, amount: 1990, ref: 'txn_5f0c', at: AT }], net: 1990 },
      },
    ),
    ...problems([], false),
  },
};

// Seed 002: the fulfilment double (ticket issuance) and the customers' balances.
const FulfilmentStatus = stringEnum(['FULFILLED', 'REFUSED']);
const fulfilKey = `${MO}/fulfil`;
const fulfilSchema = {
  operationId: 'fulfil',
  summary: 'Fulfil an order (issue its ticket)',
  description:
    'Idempotent by `key`: a repeat gets the first answer, a refusal included (a refusal is for good). Faults on op `fulfil` (REFUSE, ERROR_500, delays, resets) script it.',
  tags: ['fulfilment'],
  security: [],
  body: withExample(fulfilBody, { key: fulfilKey, order_id: MO }),
  response: {
    200: jsonAnswer(
      'Fulfilled',
      Type.Object(
        { result: stringEnum(['FULFILLED']), ref: Type.String(), key: Type.String(), order_id: Type.String() },
        { additionalProperties: false },
      ),
      {
        example: { result: 'FULFILLED', ref: 'ful_3b9e', key: fulfilKey, order_id: MO },
      },
    ),
    422: {
      description: 'Refused for good (a REFUSE fault); a repeat of the key gets the same answer',
      content: {
        'application/problem+json': {
          schema: Type.Object(
            { result: stringEnum(['REFUSED']), key: Type.String(), order_id: Type.String() },
            { additionalProperties: false, examples: [{ result: 'REFUSED', key: fulfilKey, order_id: MO }] },
          ),
        },
      },
    },
    ...problems([]),
  },
};
const getFulfilmentSchema = {
  operationId: 'getFulfilment',
  summary: 'What happened under a fulfilment key',
  description: 'The query that resolves a lost answer. The key is the rest of the path (URL-encoded or not).',
  tags: ['fulfilment'],
  security: [],
  response: {
    200: jsonAnswer(
      'The fulfilment, or NOT_FOUND',
      Type.Object(
        {
          key: Type.String(),
          status: stringEnum(['FULFILLED', 'REFUSED', 'NOT_FOUND']),
          ref: Type.Optional(nullable(Type.String())),
          order_id: Type.Optional(Type.String()),
        },
        { additionalProperties: false },
      ),
      { example: { key: fulfilKey, status: 'FULFILLED', ref: 'ful_3b9e', order_id: MO } },
    ),
    ...problems([], false),
  },
};
const listFulfilmentsSchema = {
  operationId: 'listFulfilments',
  summary: 'Every fulfilment the double holds',
  description: 'What reconciliation compares FULFILLED orders with.',
  tags: ['fulfilment'],
  security: [],
  response: {
    200: jsonAnswer(
      'The fulfilments',
      Type.Object(
        {
          fulfilments: Type.Array(
            Type.Object(
              {
                key: Type.String(),
                order_id: Type.String(),
                status: FulfilmentStatus,
                ref: nullable(Type.String()),
                at: Type.String({ format: 'date-time' }),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
      { example: { fulfilments: [{ key: fulfilKey, order_id: MO, status: 'FULFILLED', ref: 'ful_3b9e', at: AT }] } },
    ),
    ...problems([], false),
  },
};

export const channelSchemas = {
  fulfil: fulfilSchema,
  getFulfilment: getFulfilmentSchema,
  listFulfilments: listFulfilmentsSchema,
  charge: chargeSchema,
  query: querySchema,
  close: closeSchema,
  refund: refundSchema,
  statement: statementSchema,
  ...controlSchemas,
};

const WILDCARD_PARAMS: Record<string, { name: string; description: string }> = {
  '/fulfilments/*': { name: 'key', description: 'the fulfilment key (its slashes URL-encoded or not)' },
  '/_control/accounts/*': {
    name: 'customer',
    description: 'the customer, `<tenant>/<user>` (the slash URL-encoded or not)',
  },
};

export const channelSwaggerOptions: SwaggerOptions = {
  openapi: {
    openapi: '3.1.0',
    info: {
      title: 'flashpay payment provider double',
      version: '0.1.0',
      description:
        'A fake payment provider with real ledger semantics (idempotent charge per merchant order, close, full refunds by key, a statement) and scripted faults. After a charge, decline or refund it POSTs a signed notification to `notify_url` (see the flashpay API’s `paymentNotification` webhook). The `control` operations exist only when started with `--control`. Errors are RFC 9457 problem+json with a stable `code`.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: 'http://127.0.0.1:8081', description: '`flashpay channel` on this machine' }],
    tags: [
      { name: 'ledger', description: 'What a merchant integration calls' },
      { name: 'fulfilment', description: 'The fulfilment provider double (seed 002): tickets issued once per key' },
      { name: 'control', description: 'Scripting faults and notifications (tests only, `--control`)' },
    ],
  },
  // A trailing wildcard (`/fulfilments/*`: the key may hold slashes) is documented under a named
  // path parameter; the contract check (src/platform/contract.ts) maps it back.
  transform({ schema, url }) {
    const wildcard = WILDCARD_PARAMS[url];
    if (!wildcard) return { schema, url };
    const params = {
      type: 'object',
      required: [wildcard.name],
      properties: { [wildcard.name]: { type: 'string', description: wildcard.description } },
    };
    return { schema: { ...schema, params } as typeof schema, url: `${url.slice(0, -1)}:${wildcard.name}` };
  },
};
