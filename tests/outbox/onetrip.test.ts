import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { consumeBatch } from '../../src/fulfillment/fulfillment.batch.ts';
import { literal, oneTripTx } from '../../src/outbox/outbox.onetrip.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

// Issue 16, task D: the relay's claim and mark and the consumer's batch apply are one-round-trip
// transactions with their values inlined as literals. These pin that the settings hold for that
// transaction only, that a failure leaves nothing behind, and that hostile text arrives verbatim.

const TX = { lockTimeoutMs: 1_234, statementTimeoutMs: 5_678 };

describe('one-round-trip transactions', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase({ poolSize: 1 }); // one connection: a leaked SET would show on the next statement
  });
  afterAll(async () => db.drop());

  it('OT1 the settings apply inside the transaction and are gone after it', async () => {
    const settings = `SELECT current_setting('synchronous_commit') AS sync, current_setting('lock_timeout') AS lock`;
    const before = (await db.pool.query<{ sync: string; lock: string }>(settings)).rows;
    expect(before[0]!.sync).toBe('on'); // the server's durable default, which the consumer's apply keeps
    const inside = await oneTripTx<{ sync: string; lock: string; statement: string }>(
      db.pool,
      `SELECT current_setting('synchronous_commit') AS sync, current_setting('lock_timeout') AS lock,
              current_setting('statement_timeout') AS statement`,
      { ...TX, asyncCommit: true },
    );
    expect(inside.rows).toEqual([{ sync: 'off', lock: '1234ms', statement: '5678ms' }]);
    const durable = await oneTripTx<{ sync: string }>(
      db.pool,
      `SELECT current_setting('synchronous_commit') AS sync`,
      TX,
    );
    expect(durable.rows).toEqual([{ sync: 'on' }]);
    expect((await db.pool.query<{ sync: string; lock: string }>(settings)).rows).toEqual(before);
  });

  it('OT2 a failing statement rolls the whole transaction back', async () => {
    await db.pool.query(`CREATE TABLE ot2 (n int PRIMARY KEY)`);
    await expect(
      oneTripTx(db.pool, `WITH a AS (INSERT INTO ot2 VALUES (1) RETURNING n) SELECT n / 0 FROM a`, TX),
    ).rejects.toThrow(/division by zero/);
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM ot2`)).rows[0]).toEqual({ n: 0 });
    await expect(oneTripTx(db.pool, 'SELECT 1', { ...TX, lockTimeoutMs: 1.5 })).rejects.toThrow(/not an integer/);
  });

  it("OT3 text with quotes and backslashes is stored verbatim (the consumer's batch apply)", async () => {
    const hostile = ["o'1", 'o\\2', "o3'); DROP TABLE ful_inbox; --", 'o4\\\'"'];
    const events = hostile.map((orderId, i) => ({
      event_id: `e'${i}\\`,
      order_id: orderId,
      event_type: 'ORDER_PAID',
      order_version: 4,
      payload: {},
    }));
    const outcomes = await consumeBatch(db.pool, events);
    expect(outcomes.map((o) => o.effect)).toEqual(['APPLIED', 'APPLIED', 'APPLIED', 'APPLIED']);
    const rows = await db.pool.query<{ event_id: string; order_id: string; ship_count: number }>(
      `SELECT r.event_id, r.order_id, f.ship_count FROM ful_received r JOIN fulfillment f USING (order_id) ORDER BY r.id`,
    );
    expect(rows.rows).toEqual(events.map((e) => ({ event_id: e.event_id, order_id: e.order_id, ship_count: 1 })));
    expect(literal.texts(['a'])).toBe(`ARRAY['a']::text[]`);
    expect(() => literal.ints([1, Number.NaN], 'bigint')).toThrow(/not an integer/);
  });
});
