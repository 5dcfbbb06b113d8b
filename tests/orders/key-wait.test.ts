import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestDigest } from '../../src/idempotency/digest.ts';
import { countRows, startStack, type Stack } from '../support/stack.ts';
import { createSku, placeOrder, TENANT } from '../support/fixtures.ts';

// The bounded wait of seed 001: a request never waits forever behind another, and never guesses.
describe('waiting on a key, or on a busy database', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ config: { idempotencyWaitMs: 300 } });
    await createSku(stack, { sku: 'w', stock: 5 });
  });
  afterAll(async () => stack.close());

  it('a key held by an uncommitted first request: 409 REQUEST_IN_PROGRESS with Retry-After, then it executes once the first rolls back', async () => {
    // Proves the loser waits only as long as promised, and a rolled-back owner frees the key.
    const token = await stack.token(TENANT, 'waiter');
    const first = await stack.db.pool.connect();
    try {
      await first.query('BEGIN');
      await first.query(
        `INSERT INTO idempotency_keys (tenant_id, user_id, operation, idempotency_key, request_digest, state, created_at) VALUES ($1, 'waiter', 'create_order', 'slow', $2, 'PROCESSING', now())`,
        [TENANT, requestDigest('create_order', {}, { sku: 'w', quantity: 1 })],
      );
      const second = await placeOrder(stack, token, 'slow', { sku: 'w' });
      expect([second.status, second.body.code, second.headers.get('retry-after')]).toEqual([
        409,
        'REQUEST_IN_PROGRESS',
        '1',
      ]);
      expect(await countRows(stack.db, 'orders')).toBe(0);
      await first.query('ROLLBACK');
    } finally {
      first.release();
    }
    const third = await placeOrder(stack, token, 'slow', { sku: 'w' });
    expect([third.status, third.headers.get('idempotent-replayed')]).toEqual([201, 'false']);
  });

  it('a SKU row locked past the wait: 503 UNAVAILABLE, nothing stored, and the retry executes', async () => {
    // Proves a lock timeout inside the operation is "busy, retry" — not "in progress", not a stored answer.
    const token = await stack.token(TENANT, 'busy');
    const blocker = await stack.db.pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(`SELECT 1 FROM skus WHERE sku = 'w' FOR UPDATE`);
      const answer = await placeOrder(stack, token, 'busy-1', { sku: 'w' });
      expect([answer.status, answer.body.code, answer.headers.get('retry-after')]).toEqual([503, 'UNAVAILABLE', '1']);
      expect(await countRows(stack.db, 'idempotency_keys', "idempotency_key = 'busy-1'")).toBe(0);
      await blocker.query('ROLLBACK');
    } finally {
      blocker.release();
    }
    const retry = await placeOrder(stack, token, 'busy-1', { sku: 'w' });
    expect([retry.status, retry.headers.get('idempotent-replayed')]).toEqual([201, 'false']);
  });
});
