import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consume } from '../../src/fulfillment/fulfillment.service.ts';
import { fulfillmentAdminView } from '../../src/fulfillment/fulfillment.admin.ts';
import type { OutboxEvent } from '../../src/outbox/outbox.events.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { effectCounts, shipCounts } from '../support/outbox-fixtures.ts';

function event(eventId: string, orderId: string, eventType: string, version: number): OutboxEvent {
  return {
    event_id: eventId,
    order_id: orderId,
    event_type: eventType,
    order_version: version,
    payload: { order_id: orderId },
  };
}

// The consumer's two checks (inbox, monotonic version) turn at-least-once delivery into effects
// applied exactly once, whatever the repetition, order or concurrency of arrivals.
describe('fulfillment consume', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => db.drop());

  it('applies a new event, drops a replay as DUPLICATE and an older version as STALE, shipping once', async () => {
    expect(await consume(db.pool, event('101', 'cons-a', 'ORDER_PAID', 4))).toBe('APPLIED');
    expect(await consume(db.pool, event('101', 'cons-a', 'ORDER_PAID', 4))).toBe('DUPLICATE');
    expect(await consume(db.pool, event('100', 'cons-a', 'ORDER_CANCELLED', 2))).toBe('STALE');
    // same version under another id (a writer bug) is not newer either
    expect(await consume(db.pool, event('102', 'cons-a', 'ORDER_PAID', 4))).toBe('STALE');
    expect(await consume(db.pool, event('103', 'cons-a', 'ORDER_REFUNDED', 7))).toBe('APPLIED');
    expect(await shipCounts(db.pool, 'cons')).toEqual({ 'cons-a': 1 });
    expect(await effectCounts(db.pool, 'cons')).toEqual({ APPLIED: 2, DUPLICATE: 1, STALE: 2 });

    const view = await fulfillmentAdminView(db.pool, 'cons-a');
    expect(view).toMatchObject({
      order_id: 'cons-a',
      ship_count: 1,
      last_version: 7,
      last_event_type: 'ORDER_REFUNDED',
      failed_arrivals: 0,
    });
    expect(view?.arrivals.map((a) => [a.event_id, a.event_type, a.version, a.effect])).toEqual([
      ['101', 'ORDER_PAID', 4, 'APPLIED'],
      ['101', 'ORDER_PAID', 4, 'DUPLICATE'],
      ['100', 'ORDER_CANCELLED', 2, 'STALE'],
      ['102', 'ORDER_PAID', 4, 'STALE'],
      ['103', 'ORDER_REFUNDED', 7, 'APPLIED'],
    ]);
    expect(await fulfillmentAdminView(db.pool, 'nothing-arrived')).toBeNull();
  });

  it('does not ship for events other than ORDER_PAID', async () => {
    expect(await consume(db.pool, event('201', 'fail-a', 'ORDER_FAILED', 3))).toBe('APPLIED');
    expect(await shipCounts(db.pool, 'fail')).toEqual({ 'fail-a': 0 });
  });

  it('of 16 simultaneous copies of one event exactly one is APPLIED (the inbox key decides)', async () => {
    const effects = await Promise.all(
      Array.from({ length: 16 }, () => consume(db.pool, event('301', 'race-a', 'ORDER_PAID', 4))),
    );
    expect(effects.filter((e) => e === 'APPLIED')).toHaveLength(1);
    expect(effects.filter((e) => e === 'DUPLICATE')).toHaveLength(15);
    expect(await shipCounts(db.pool, 'race')).toEqual({ 'race-a': 1 });
  });

  it('a failing effect transaction leaves no effect and no inbox entry, but the arrival is logged as ERROR', async () => {
    // A trigger stands in for a storage fault inside the effect transaction.
    await db.pool.query(`CREATE FUNCTION boom() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.order_id = 'boom-a' THEN RAISE EXCEPTION 'simulated storage fault'; END IF; RETURN NEW; END $$`);
    await db.pool.query(
      `CREATE TRIGGER boom BEFORE INSERT OR UPDATE ON fulfillment FOR EACH ROW EXECUTE FUNCTION boom()`,
    );
    await expect(consume(db.pool, event('401', 'boom-a', 'ORDER_PAID', 4))).rejects.toThrow(/simulated storage fault/);
    expect(await effectCounts(db.pool, 'boom')).toEqual({ ERROR: 1 });
    expect((await db.pool.query(`SELECT 1 FROM ful_inbox WHERE event_id = '401'`)).rowCount).toBe(0);

    await db.pool.query(`DROP TRIGGER boom ON fulfillment`);
    expect(await consume(db.pool, event('401', 'boom-a', 'ORDER_PAID', 4))).toBe('APPLIED'); // the retry applies it
    expect(await fulfillmentAdminView(db.pool, 'boom-a')).toMatchObject({
      ship_count: 1,
      failed_arrivals: 1,
      arrivals: [{ event_id: '401', effect: 'APPLIED' }],
    });
  });
});
