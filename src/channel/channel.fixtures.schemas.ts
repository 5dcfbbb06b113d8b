// Request schemas of the seed-002 fixtures of the provider double (fulfilments, customer accounts).
import { MAX_ORDER_AMOUNT_MINOR } from '../platform/money.ts';
const key = { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' } as const;
export const fulfilBody = {
  type: 'object',
  required: ['key', 'order_id'],
  properties: { key, order_id: { type: 'string', minLength: 1, maxLength: 255 } },
} as const;

const customer = { type: 'string', minLength: 1, maxLength: 300 } as const;
export const accountBody = {
  type: 'object',
  additionalProperties: false,
  required: ['customer', 'balance'],
  properties: { customer, balance: { type: 'integer', minimum: 0, maximum: MAX_ORDER_AMOUNT_MINOR } },
} as const;
