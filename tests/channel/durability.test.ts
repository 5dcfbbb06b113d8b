import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgLedger } from '../../src/channel/index.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { client, startTestChannel } from './support.ts';

describe('channel PostgreSQL ledger', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await freshDatabase({ migrated: false });
  });
  afterAll(async () => db.drop());

  it('survives a restart: the charge is still there and a repeat returns the same txn', async () => {
    // Proves the ledger change is committed before the reply, so a new channel over the same database knows it.
    const first = await startTestChannel({ store: await createPgLedger(db.pool) });
    const charged = await client(first.url).charge('durable-1', 4200);
    const refunded = await client(first.url).refund('durable-1', 'rk-durable', 4200);
    await client(first.url).close('closed-1');
    await first.close();

    const second = await startTestChannel({ store: await createPgLedger(db.pool) });
    const api = client(second.url);
    try {
      expect((await api.query('durable-1')).body).toMatchObject({
        status: 'REFUNDED',
        amount: 4200,
        txn: charged.body.txn,
      });
      expect((await api.charge('durable-1', 4200)).body.txn).toBe(charged.body.txn);
      expect((await api.refund('durable-1', 'rk-durable', 4200)).body.refund_id).toBe(refunded.body.refund_id);
      expect((await api.charge('closed-1', 10)).body.result).toBe('CLOSED');
      expect((await api.statement()).lines.map((line) => line.type)).toEqual(['CHARGE', 'REFUND']);
    } finally {
      await second.close();
    }
  });

  it('serializes one merchant order across two channels sharing the database', async () => {
    // Proves the lock is in PostgreSQL, not only in process: two instances never double-charge.
    const [a, b] = await Promise.all([
      startTestChannel({ store: await createPgLedger(db.pool) }),
      startTestChannel({ store: await createPgLedger(db.pool) }),
    ]);
    try {
      const answers = await Promise.all(
        Array.from({ length: 60 }, (_, i) => client(i % 2 ? a.url : b.url).charge('shared-1', 777)),
      );
      expect(new Set(answers.map((answer) => answer.body.txn)).size).toBe(1);
      const lines = (await client(a.url).statement()).lines.filter((line) => line.merchant_order === 'shared-1');
      expect(lines).toHaveLength(1);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
