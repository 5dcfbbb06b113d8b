import type { SwaggerOptions } from '@fastify/swagger';
import { Type, type TSchema } from 'typebox';
import { HEADERS, jsonAnswer, nullable, problemExample, stringEnum } from '../platform/openapi.ts';
import { FAULT_KINDS, FAULT_OPS } from './faults.ts';
import { accountBody, fulfilBody } from './channel.fixtures.schemas.ts';
import {
  callbacksBody,
  chargeBody,
  closeBody,
  faultBody,
  queryParams,
  refundBody,
  releaseBody,
  sendBody,
  settingsBody,
  statementQuery,
} from './channel.schemas.ts';

// The provider double's own OpenAPI document (its /docs): the ledger API every integration uses,
// and the control API (with `--control`) that scripts faults. Request schemas stay the JSON Schemas
// of channel.schemas.ts, which Fastify validates with; answers are declared here.

const MO = 'ord_7c1e2b9f4a';
const AT = '2026-11-30T18:00:00.000Z';

const CODES = {
  VALIDATION: 400,
  UNAUTHENTICATED: 401,
  NOT_FOUND: 404,
  PAYLOAD_TOO_LARGE: 413,
  CLOSED: 409,
  NOT_CHARGED: 409,
  ALREADY_REFUNDED: 409,
  AMOUNT_MISMATCH: 422,
  REFUND_KEY_REUSED: 422,
  INTERNAL: 500,
  UNAVAILABLE: 503,
} as const;
type Code = keyof typeof CODES;

const TEXT: Record<number, string> = {
  400: 'Not valid; nothing happened',
  401: 'The control API needs `Authorization: Bearer <FLASHPAY_CONTROL_TOKEN>` (when the double was started with one)',
  404: 'Not found',
  409: 'Refused in the charge’s current state',
  413: 'Body too large',
  422: 'Conflicts with what the ledger holds',
  500: 'An injected ERROR_500 fault, or a failure; the ledger is untouched',
  503: 'The ledger’s database is unreachable or overloaded: nothing happened, unless `outcome` is `unknown` (the connection was lost while committing); retry after Retry-After',
};

function problems(codes: Code[], bodyRoute = true) {
  const edge: Code[] = bodyRoute ? ['VALIDATION', 'PAYLOAD_TOO_LARGE'] : ['VALIDATION'];
  const all: Code[] = [...new Set<Code>([...edge, ...codes, 'INTERNAL', 'UNAVAILABLE'])];
  const out: Record<number, unknown> = {};
  for (const status of [...new Set(all.map((c) => CODES[c]))]) {
    const list = all.filter((c) => CODES[c] === status);
    const schema = Type.Object(
      {
        type: Type.String(),
        title: Type.String(),
        status: Type.Integer(),
        code: stringEnum(list),
        detail: Type.String(),
      },
      {
        additionalProperties: true,
        examples: [{ ...problemExample('VALIDATION', TEXT[status] ?? ''), code: list[0], status }],
      },
    );
    const headers =
      status === 401
        ? { headers: { 'WWW-Authenticate': HEADERS.wwwAuthenticate } }
        : status === 503
          ? { headers: { 'Retry-After': HEADERS.retryAfter } }
          : {};
    out[status] = {
      description: `${TEXT[status] ?? 'Error'}: ${list.map((c) => `\`${c}\``).join(', ')}`,
      ...headers,
      content: { 'application/problem+json': { schema } },
    };
  }
  return out;
}

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

const withExample = (schema: object, example: unknown) => ({ ...schema, examples: [example] });

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

function control(
  operationId: string,
  summary: string,
  answer: TSchema,
  example: unknown,
  body?: object,
  bodyExample?: unknown,
  extra: Code[] = [],
) {
  return {
    operationId,
    summary,
    description: `${summary}. Only with \`--control\`.`,
    tags: ['control'],
    security: [],
    ...(body ? { body: withExample(body, bodyExample) } : {}),
    response: {
      200: jsonAnswer(summary, answer, { example }),
      ...problems(['UNAUTHENTICATED', ...extra], body !== undefined),
    },
  };
}

const FaultRule = Type.Object(
  {
    id: Type.Integer(),
    op: stringEnum(FAULT_OPS),
    kind: stringEnum(FAULT_KINDS),
    merchant_order: nullable(Type.String()),
    ms: Type.Integer(),
    remaining: Type.Integer(),
  },
  { additionalProperties: false },
);
const faultExample = { id: 1, op: 'charge', kind: 'DELAY_RESPONSE', merchant_order: MO, ms: 2000, remaining: 1 };
const Callbacks = Type.Object(
  {
    mode: stringEnum(['AUTO', 'HOLD']),
    duplicates: Type.Integer(),
    delay_ms: Type.Array(Type.Integer(), { minItems: 2, maxItems: 2 }),
    seed: Type.Integer(),
  },
  { additionalProperties: false },
);
const callbacksExample = { mode: 'HOLD', duplicates: 2, delay_ms: [0, 0], seed: 1 };
const Held = Type.Object(
  {
    id: Type.String(),
    notify_id: Type.String(),
    merchant_order: Type.String(),
    kind: stringEnum(['CHARGED', 'DECLINED', 'REFUNDED']),
    amount: Type.Integer(),
    txn: nullable(Type.String()),
  },
  { additionalProperties: false },
);
const heldExample = {
  id: 'held_1',
  notify_id: 'ntf_41',
  merchant_order: MO,
  kind: 'CHARGED',
  amount: 1990,
  txn: 'txn_5f0c',
};
const NotificationView = Type.Object(
  {
    notify_id: Type.String(),
    merchant_order: Type.String(),
    kind: stringEnum(['CHARGED', 'DECLINED', 'REFUNDED']),
    amount: Type.Integer(),
    txn: nullable(Type.String()),
    notify_url: Type.String(),
    status: Type.String({ description: 'delivery status over all copies' }),
    attempts: Type.Integer(),
    copies: Type.Array(
      Type.Object(
        { status: Type.String(), attempts: Type.Integer(), last_error: nullable(Type.String()) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
const notificationExample = {
  notify_id: 'ntf_41',
  merchant_order: MO,
  kind: 'CHARGED',
  amount: 1990,
  txn: 'txn_5f0c',
  notify_url: 'http://127.0.0.1:8080/v1/payment-notifications',
  status: 'DELIVERED',
  attempts: 1,
  copies: [{ status: 'DELIVERED', attempts: 1, last_error: null }],
};
const Counts = Type.Object(
  { total: Type.Integer(), by_order: Type.Record(Type.String(), Type.Integer()) },
  { additionalProperties: false },
);
const Settings = Type.Object(
  { notify_retry_base_ms: Type.Integer(), notify_max_attempts: Type.Integer() },
  { additionalProperties: false },
);

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
const Account = Type.Object(
  { customer: Type.String({ description: '`<tenant>/<user>`' }), balance: Type.Integer() },
  { additionalProperties: false },
);

export const channelSchemas = {
  fulfil: fulfilSchema,
  getFulfilment: getFulfilmentSchema,
  listFulfilments: listFulfilmentsSchema,
  setAccount: control(
    'setAccount',
    "Set a customer's balance (charges beyond it are declined INSUFFICIENT_FUNDS)",
    Account,
    { customer: 'acme/alice', balance: 5000 },
    accountBody,
    { customer: 'acme/alice', balance: 5000 },
  ),
  getAccount: control(
    'getAccount',
    "A customer's balance",
    Account,
    { customer: 'acme/alice', balance: 3010 },
    undefined,
    undefined,
    ['NOT_FOUND'],
  ),
  charge: chargeSchema,
  query: querySchema,
  close: closeSchema,
  refund: refundSchema,
  statement: statementSchema,
  reset: control(
    'reset',
    'Empty the ledger, the fault rules and the held callbacks',
    Type.Object({ ok: Type.Boolean() }, { additionalProperties: false }),
    { ok: true },
  ),
  armFault: control('armFault', 'Arm a fault rule', FaultRule, faultExample, faultBody, {
    op: 'charge',
    kind: 'DELAY_RESPONSE',
    merchant_order: MO,
    ms: 2000,
  }),
  listFaults: control('listFaults', 'The armed fault rules', Type.Array(FaultRule), [faultExample]),
  setCallbacks: control('setCallbacks', 'How notifications are delivered', Callbacks, callbacksExample, callbacksBody, {
    mode: 'HOLD',
    duplicates: 2,
  }),
  getCallbacks: control('getCallbacks', 'The notification delivery settings', Callbacks, callbacksExample),
  listHeld: control('listHeldCallbacks', 'Notifications held back (mode HOLD)', Type.Array(Held), [heldExample]),
  release: control(
    'releaseCallbacks',
    'Deliver held notifications in exactly this order',
    Type.Object({ released: Type.Array(Type.String()) }, { additionalProperties: false }),
    { released: ['held_2', 'held_1'] },
    releaseBody,
    { ids: ['held_2', 'held_1'] },
  ),
  send: control(
    'sendNotification',
    'Send a notification now (a late or forged one)',
    NotificationView,
    notificationExample,
    sendBody,
    { merchant_order: MO, kind: 'CHARGED', amount: 1990 },
  ),
  requests: control(
    'countRequests',
    'Requests received per operation and merchant order',
    Type.Object(Object.fromEntries(FAULT_OPS.map((op) => [op, Counts])), { additionalProperties: false }),
    {
      charge: { total: 1, by_order: { [MO]: 1 } },
      query: { total: 0, by_order: {} },
      close: { total: 0, by_order: {} },
      refund: { total: 0, by_order: {} },
      fulfil: { total: 0, by_order: {} },
    },
  ),
  notifications: control('listNotifications', 'Every notification and its deliveries', Type.Array(NotificationView), [
    notificationExample,
  ]),
  getSettings: control('getSettings', 'Notification retry settings', Settings, {
    notify_retry_base_ms: 1000,
    notify_max_attempts: 8,
  }),
  setSettings: control(
    'setSettings',
    'Change the notification retry settings',
    Settings,
    { notify_retry_base_ms: 20, notify_max_attempts: 5 },
    settingsBody,
    { notify_retry_base_ms: 20 },
  ),
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
