import { MAX_ORDER_AMOUNT_MINOR } from '../platform/money.ts';
import { FAULT_KINDS, FAULT_OPS } from './faults.ts';

// Request schemas, validated by Fastify at the edge; a failure is a 400 VALIDATION problem and
// never reaches the ledger. Limits, each with its reason:
/** Fastify's default path-parameter limit: longer ids could be charged but never queried. */
export const MAX_MERCHANT_ORDER_LENGTH = 100;
/** Far above any real basket, far below 2^53: the one limit, shared with order creation (src/platform/money.ts). */
export const MAX_AMOUNT_MINOR = MAX_ORDER_AMOUNT_MINOR;
/** A fault holds one request at most this long: a test that needs more is waiting on a bug. */
export const MAX_FAULT_MS = 600_000;
export const MAX_FAULT_TIMES = 1_000_000;
/** Enough to model an at-least-once provider; more only floods the receiver. */
export const MAX_DUPLICATES = 10;
export const MAX_CALLBACK_DELAY_MS = 60_000;
export const MAX_NOTIFY_ATTEMPTS = 100;

const merchantOrder = {
  type: 'string',
  minLength: 1,
  maxLength: MAX_MERCHANT_ORDER_LENGTH,
  pattern: '^[\\x21-\\x7e]+$',
} as const;
const amount = { type: 'integer', minimum: 1, maximum: MAX_AMOUNT_MINOR } as const;
const opaqueKey = { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' } as const;
const url = { type: 'string', minLength: 1, maxLength: 2048, pattern: '^https?://' } as const;
const notifyKind = { enum: ['CHARGED', 'DECLINED', 'REFUNDED'] } as const;

// The ledger API tolerates extra fields (a client may send more than we read); the control API
// does not (a misspelt field there silently scripts the wrong fault).
export const chargeBody = {
  type: 'object',
  required: ['merchant_order', 'amount', 'notify_url'],
  properties: {
    merchant_order: merchantOrder,
    amount,
    notify_url: url,
    customer: { type: 'string', minLength: 1, maxLength: 300 },
  },
} as const;

export const closeBody = {
  type: 'object',
  required: ['merchant_order'],
  properties: { merchant_order: merchantOrder },
} as const;

export const refundBody = {
  type: 'object',
  required: ['merchant_order', 'refund_key', 'amount'],
  properties: { merchant_order: merchantOrder, refund_key: opaqueKey, amount },
} as const;

export const queryParams = {
  type: 'object',
  required: ['merchant_order'],
  properties: { merchant_order: merchantOrder },
} as const;

// A paged statement answers at most this many lines (the default when only `after` is given).
export const STATEMENT_PAGE_DEFAULT = 1_000;
export const STATEMENT_PAGE_MAX = 10_000;

export const statementQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    merchant_order: merchantOrder,
    after: {
      type: 'string',
      pattern: '^[0-9]{1,15}$',
      description: 'a cursor: a `next` this statement answered ("0": from the start)',
    },
    // A string: query values arrive as text and this validator does not coerce them.
    limit: {
      type: 'string',
      pattern: '^[1-9][0-9]{0,4}$',
      description: `at most this many lines (1–${STATEMENT_PAGE_MAX}; more is read as ${STATEMENT_PAGE_MAX})`,
    },
  },
} as const;

export const faultBody = {
  type: 'object',
  additionalProperties: false,
  required: ['op', 'kind'],
  properties: {
    op: { enum: FAULT_OPS },
    kind: { enum: FAULT_KINDS },
    merchant_order: merchantOrder,
    ms: { type: 'integer', minimum: 0, maximum: MAX_FAULT_MS },
    times: { type: 'integer', minimum: 1, maximum: MAX_FAULT_TIMES },
  },
} as const;

export const callbacksBody = {
  type: 'object',
  additionalProperties: false,
  required: ['mode'],
  properties: {
    mode: { enum: ['AUTO', 'HOLD'] },
    duplicates: { type: 'integer', minimum: 1, maximum: MAX_DUPLICATES },
    delay_ms: {
      type: 'array',
      minItems: 2,
      maxItems: 2,
      items: { type: 'integer', minimum: 0, maximum: MAX_CALLBACK_DELAY_MS },
    },
    seed: { type: 'integer', minimum: 0, maximum: 4_294_967_295 },
  },
} as const;

export const releaseBody = {
  type: 'object',
  additionalProperties: false,
  required: ['ids'],
  properties: { ids: { type: 'array', maxItems: 10_000, items: opaqueKey } },
} as const;

export const sendBody = {
  type: 'object',
  additionalProperties: false,
  required: ['merchant_order', 'kind', 'amount'],
  properties: {
    merchant_order: merchantOrder,
    kind: notifyKind,
    amount,
    txn: opaqueKey,
    notify_url: url,
    notify_id: opaqueKey,
  },
} as const;

export const settingsBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    notify_retry_base_ms: { type: 'integer', minimum: 1, maximum: MAX_CALLBACK_DELAY_MS },
    notify_max_attempts: { type: 'integer', minimum: 1, maximum: MAX_NOTIFY_ATTEMPTS },
  },
} as const;

export interface ChargeBody {
  merchant_order: string;
  amount: number;
  notify_url: string;
}
export interface RefundBody {
  merchant_order: string;
  refund_key: string;
  amount: number;
}
export interface FaultBody {
  op: (typeof FAULT_OPS)[number];
  kind: (typeof FAULT_KINDS)[number];
  merchant_order?: string;
  ms?: number;
  times?: number;
}
export interface CallbacksBody {
  mode: 'AUTO' | 'HOLD';
  duplicates?: number;
  delay_ms?: [number, number];
  seed?: number;
}
export interface SendBody {
  merchant_order: string;
  kind: 'CHARGED' | 'DECLINED' | 'REFUNDED';
  amount: number;
  txn?: string;
  notify_url?: string;
  notify_id?: string;
}
export interface SettingsBody {
  notify_retry_base_ms?: number;
  notify_max_attempts?: number;
}
