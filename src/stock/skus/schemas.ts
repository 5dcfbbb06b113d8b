import { Type, type Static } from 'typebox';
import { ADMIN_AUTH, BODY_ERRORS, HEADERS, jsonAnswer, nullable, problemAnswers } from '../../platform/openapi.ts';
import { PARAM_ERRORS } from '../../platform/openapi.ts';

// Prices are minor units; 10^12 keeps price × MAX_QUANTITY far inside Number.MAX_SAFE_INTEGER.
const MAX_PRICE = 1_000_000_000_000;
/**
 * A SKU holds at most this many units, whatever adds up to it (`stock`, every `add_stock`), and no
 * per-user limit is larger: far inside the integer columns, whose overflow answered 500 (issue 40).
 */
export const MAX_STOCK = 100_000_000;
/**
 * A SKU id is a path segment (`/v1/admin/skus/{sku}`): it starts with a letter or digit, so `.` and
 * `..` (which URL normalisation removes) and anything that needs escaping are refused at creation.
 */
export const SKU_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$';

export const SkuBody = Type.Object(
  {
    sku: Type.String({
      minLength: 1,
      maxLength: 64,
      pattern: SKU_PATTERN,
      description: 'a letter or digit, then letters, digits, `.`, `_`, `:` or `-`; unique per tenant',
    }),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    // Free items are refused: the provider refuses a charge of 0, so a price-0 order could never
    // be paid and would end FAILED (docs/security.md).
    price: Type.Integer({ minimum: 1, maximum: MAX_PRICE, description: 'minor units, at least 1' }),
    stock: Type.Integer({ minimum: 0, maximum: MAX_STOCK }),
    per_user_limit: Type.Optional(
      nullable(
        Type.Integer({
          minimum: 1,
          maximum: MAX_STOCK,
          description: 'units one buyer may hold or own; null: no limit',
        }),
      ),
    ),
    hold_ttl_ms: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 7 * 24 * 3600 * 1000,
        description: 'how long a reservation is held (default 60000)',
      }),
    ),
  },
  {
    additionalProperties: false,
    examples: [{ sku: 'tee-black-m', name: 'T-shirt, black, M', price: 1990, stock: 100, per_user_limit: 2 }],
  },
);
export type SkuBody = Static<typeof SkuBody>;

export const SkuView = Type.Object(
  {
    sku: Type.String(),
    name: Type.String(),
    price: Type.Integer(),
    per_user_limit: nullable(Type.Integer()),
    hold_ttl_ms: Type.Integer(),
    total: Type.Integer({ description: '= available + held + confirmed + refunded_shipped, always' }),
    available: Type.Integer(),
    held: Type.Integer(),
    confirmed: Type.Integer(),
    released: Type.Integer({ description: 'units released so far (expired or cancelled holds)' }),
    refunded_shipped: Type.Integer({
      description:
        'units of orders refunded after they shipped (fulfilment FULFILLED): out of stock, not on sale, until `POST /v1/admin/orders/{id}/return` puts them back (issue 48)',
    }),
  },
  { additionalProperties: false },
);

const skuExample = {
  sku: 'tee-black-m',
  name: 'T-shirt, black, M',
  price: 1990,
  per_user_limit: 2,
  hold_ttl_ms: 60000,
  total: 100,
  available: 97,
  held: 2,
  confirmed: 1,
  released: 4,
  refunded_shipped: 0,
};
const SkuParams = Type.Object({ sku: Type.String({ minLength: 1, maxLength: 64, examples: ['tee-black-m'] }) });

export const createSkuSchema = {
  operationId: 'createSku',
  summary: 'Put a SKU on sale',
  description:
    'Creates the SKU with its stock. 409 `SKU_EXISTS` when the tenant has it already; 409 `SKU_OWNED_BY_STOCK_SERVICE` on a shop whose stock service has its own database (write SKUs there).',
  tags: ['admin'],
  body: SkuBody,
  response: {
    201: jsonAnswer('The SKU', SkuView, {
      headers: { Location: { ...HEADERS.location, example: '/v1/admin/skus/tee-black-m' } },
      example: { ...skuExample, available: 100, held: 0, confirmed: 0, released: 0, refunded_shipped: 0 },
    }),
    ...problemAnswers([...BODY_ERRORS, ...ADMIN_AUTH, 'SKU_EXISTS', 'SKU_OWNED_BY_STOCK_SERVICE']),
  },
};

export const getSkuSchema = {
  operationId: 'getSku',
  summary: 'A SKU and its stock counters',
  description: '`total = available + held + confirmed + refunded_shipped` at every commit.',
  tags: ['admin'],
  params: SkuParams,
  response: {
    200: jsonAnswer('The SKU', SkuView, { example: skuExample }),
    ...problemAnswers([...PARAM_ERRORS, ...ADMIN_AUTH, 'SKU_NOT_FOUND']),
  },
};

export const PatchSkuBody = Type.Object(
  {
    price: Type.Optional(SkuBody.properties.price),
    name: Type.Optional(SkuBody.properties.name),
    add_stock: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_STOCK,
        description: `new units put on sale; the SKU's total stays at most ${MAX_STOCK} (400 \`VALIDATION\` otherwise, \`maximum\` saying how many more fit)`,
      }),
    ),
  },
  { additionalProperties: false, minProperties: 1, examples: [{ price: 2490, add_stock: 50 }] },
);
export type PatchSkuBody = Static<typeof PatchSkuBody>;

export const patchSkuSchema = {
  operationId: 'updateSku',
  summary: 'Change a SKU’s price or name, or add stock',
  description:
    'A price or name change alters no existing order: each order line keeps its snapshot. 409 `SKU_OWNED_BY_STOCK_SERVICE` on a shop whose stock service has its own database. An optional `Idempotency-Key` makes the change safe to send twice (`add_stock` then adds once; the same key with another body: 422 `IDEMPOTENCY_KEY_REUSED`); the answer then carries `Idempotent-Replayed`.',
  tags: ['admin'],
  params: SkuParams,
  body: PatchSkuBody,
  response: {
    200: jsonAnswer('The SKU', SkuView, {
      headers: { 'Idempotent-Replayed': HEADERS.replayed },
      example: { ...skuExample, price: 2490 },
    }),
    ...problemAnswers(
      [
        ...PARAM_ERRORS,
        'PAYLOAD_TOO_LARGE',
        ...ADMIN_AUTH,
        'SKU_NOT_FOUND',
        'SKU_OWNED_BY_STOCK_SERVICE',
        'IDEMPOTENCY_KEY_INVALID',
        'REQUEST_IN_PROGRESS',
        'IDEMPOTENCY_KEY_REUSED',
      ],
      { 'Idempotent-Replayed': HEADERS.replayed },
    ),
  },
};

export const runExpirySchema = {
  operationId: 'runExpiry',
  summary: 'Release every expired hold now',
  description: 'Releases every HELD reservation past its expiry, and nothing else.',
  tags: ['admin'],
  response: {
    200: jsonAnswer(
      'How many were released',
      Type.Object({ released: Type.Integer() }, { additionalProperties: false }),
      { example: { released: 3 } },
    ),
    ...problemAnswers(['VALIDATION', 'PAYLOAD_TOO_LARGE', ...ADMIN_AUTH]),
  },
};
