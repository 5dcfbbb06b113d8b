import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor } from '../../src/ops/ops.cursor.ts';
import { startPaymentStack, type PaymentStack } from '../support/payments.ts';

// Issue 48: the console's search cursor is validated as a position, the date included, before any query.

let stack: PaymentStack;

beforeAll(async () => {
  stack = await startPaymentStack();
});
afterAll(async () => {
  await stack?.close();
});

const cursorOf = (createdAt: string, orderId = 'ord_x') =>
  Buffer.from(`${createdAt}|${orderId}`, 'utf8').toString('base64url');

describe('issue 48: cursor dates validated', () => {
  it('CU-01: a cursor whose date the calendar does not have is 400 VALIDATION naming the cursor, never a 500', async () => {
    // Proves decodeCursor checks the instant, not only its shape: PostgreSQL would refuse these dates with a 500.
    for (const impossible of [
      '2026-02-31T25:61:00.000000Z',
      '2026-02-31T10:00:00.000000Z',
      '2023-02-29T00:00:00.000000Z',
      '2026-12-07T24:00:00.000000Z',
      '2026-13-01T00:00:00.000000Z',
      '0000-01-01T00:00:00.000000Z',
    ]) {
      const r = await stack.call('GET', `/v1/admin/orders?cursor=${cursorOf(impossible)}`, { token: stack.admin });
      expect([impossible, r.status, r.body.code, r.body.field]).toEqual([
        impossible,
        400,
        'VALIDATION',
        'querystring.cursor',
      ]);
      expect(r.headers.get('content-type')).toMatch(/application\/problem\+json/);
    }
  });

  it('CU-02: a cursor this server gives (a real instant, a leap day included) still pages', async () => {
    // Proves the date check refuses only impossible dates.
    const leap = { createdAt: '2024-02-29T23:59:59.999999Z', orderId: 'ord_leap' };
    expect(decodeCursor(encodeCursor(leap))).toEqual(leap);
    const r = await stack.call('GET', `/v1/admin/orders?cursor=${encodeCursor(leap)}`, { token: stack.admin });
    expect([r.status, r.body.orders]).toEqual([200, []]);
  });
});
