import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signPayload } from '../../src/platform/signature.ts';
import type { TestDatabase } from '../support/db.ts';
import { effectCounts, TEST_SECRET, type WebhookConsumer, openConsumer } from '../support/outbox-fixtures.ts';

async function post(
  url: string,
  body: string,
  signature?: string,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (signature !== undefined) headers['flashpay-signature'] = signature;
  const response = await fetch(url, { method: 'POST', headers, body });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

// The webhook consumer acts only on events it can verify, answers 200 {effect} once the effect is
// durable, and 500 on a storage fault so that the relay retries instead of marking it published.
describe('POST /v1/fulfillment/events', () => {
  let db: TestDatabase;
  let consumer: WebhookConsumer;
  let close: () => Promise<void>;
  beforeAll(async () => {
    ({ db, consumer, close } = await openConsumer());
  });
  afterAll(async () => close());

  const body = JSON.stringify({
    event_id: '9001',
    order_id: 'hook-1',
    event_type: 'ORDER_PAID',
    order_version: 4,
    payload: { amount: 1990 },
  });

  it('refuses a missing, forged or stale signature with 400 BAD_SIGNATURE and records nothing', async () => {
    expect(await post(consumer.url, body)).toMatchObject({ status: 400, json: { code: 'BAD_SIGNATURE' } });
    expect(await post(consumer.url, body, signPayload('wrong-secret', body))).toMatchObject({
      status: 400,
      json: { code: 'BAD_SIGNATURE' },
    });
    const old = Math.floor(Date.now() / 1000) - 3600;
    expect(await post(consumer.url, body, signPayload(TEST_SECRET, body, old))).toMatchObject({
      status: 400,
      json: { code: 'BAD_SIGNATURE' },
    });
    expect(await effectCounts(db.pool, 'hook')).toEqual({});
    expect(consumer.script.requests).toBe(0); // refused before reaching the handler
  });

  it('answers 200 {effect} for a signed event, DUPLICATE on a replay', async () => {
    expect(await post(consumer.url, body, signPayload(TEST_SECRET, body))).toEqual({
      status: 200,
      json: { effect: 'APPLIED' },
    });
    expect(await post(consumer.url, body, signPayload(TEST_SECRET, body))).toEqual({
      status: 200,
      json: { effect: 'DUPLICATE' },
    });
  });

  it('refuses a signed but malformed event (unknown type) with 400 VALIDATION', async () => {
    const bad = JSON.stringify({
      event_id: '9002',
      order_id: 'bad-1',
      event_type: 'ORDER_SHIPPED',
      order_version: 4,
      payload: {},
    });
    expect(await post(consumer.url, bad, signPayload(TEST_SECRET, bad))).toMatchObject({
      status: 400,
      json: { code: 'VALIDATION' },
    });
    expect(await effectCounts(db.pool, 'bad')).toEqual({});
  });

  it('answers 500 on a storage fault, and APPLIED once storage is back', async () => {
    const event = JSON.stringify({
      event_id: '9003',
      order_id: 'boom-1',
      event_type: 'ORDER_PAID',
      order_version: 4,
      payload: {},
    });
    await db.pool.query(
      `CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'simulated storage fault'; END $$`,
    );
    await db.pool.query(`CREATE TRIGGER boom BEFORE INSERT ON ful_inbox FOR EACH ROW EXECUTE FUNCTION boom()`);
    expect(await post(consumer.url, event, signPayload(TEST_SECRET, event))).toMatchObject({
      status: 500,
      json: { code: 'INTERNAL' },
    });
    await db.pool.query(`DROP TRIGGER boom ON ful_inbox`);
    expect(await post(consumer.url, event, signPayload(TEST_SECRET, event))).toEqual({
      status: 200,
      json: { effect: 'APPLIED' },
    });
    expect(await effectCounts(db.pool, 'boom')).toEqual({ APPLIED: 1, ERROR: 1 });
  });
});
