// The examples of the orders' OpenAPI operations (orders.schemas.ts), and the ids other modules'
// examples share.
export const ORDER_ID_EXAMPLE = 'ord_7c1e2b9f4a';
export const AT_EXAMPLE = '2026-11-30T18:00:00.000Z';

export const queuedExample = {
  order_id: ORDER_ID_EXAMPLE,
  status: 'PENDING',
  sku: 'tee-black-m',
  quantity: 1,
  amount: 1990,
  lines: [{ sku: 'tee-black-m', name: 'T-shirt, black, M', unit_price: 1990, quantity: 1, amount: 1990 }],
};

export const createdExample = {
  order_id: ORDER_ID_EXAMPLE,
  status: 'CREATED',
  sku: 'tee-black-m',
  quantity: 1,
  amount: 1990,
  reservation: { key: 'rsv_7c1e2b9f4a_0', status: 'HELD', expires_at: AT_EXAMPLE },
  lines: [{ sku: 'tee-black-m', name: 'T-shirt, black, M', unit_price: 1990, quantity: 1, amount: 1990 }],
  reservations: [{ sku: 'tee-black-m', key: 'rsv_7c1e2b9f4a_0', status: 'HELD', expires_at: AT_EXAMPLE }],
};

/** A paid order as `GET /v1/orders/{id}` shows it: the example every order view in the documents starts from. */
export const PAID_ORDER_EXAMPLE = {
  order_id: ORDER_ID_EXAMPLE,
  status: 'PAID',
  version: 3,
  sku: 'tee-black-m',
  quantity: 1,
  amount: 1990,
  reservation: { key: 'rsv_7c1e2b9f4a_0', status: 'CONFIRMED', expires_at: AT_EXAMPLE },
  lines: [{ sku: 'tee-black-m', name: 'T-shirt, black, M', unit_price: 1990, quantity: 1, amount: 1990 }],
  reservations: [{ sku: 'tee-black-m', key: 'rsv_7c1e2b9f4a_0', status: 'CONFIRMED' }],
  fulfilment: { status: 'FULFILLED', ref: 'ful_3b9e' },
  created_at: AT_EXAMPLE,
  updated_at: AT_EXAMPLE,
};
