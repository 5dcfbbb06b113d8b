import { inTx, type Db } from '../platform/db.ts';
import { newFulfilment, type FulfilmentRecord, type FulfilmentStore } from './fulfilments.ts';

// The fulfilment double's records in the channel's own database, beside its ledger. The first
// answer per key wins by the primary key (INSERT … ON CONFLICT DO NOTHING, then read it back).
const SCHEMA = `
CREATE TABLE IF NOT EXISTS channel_fulfilments (
  key      text PRIMARY KEY CHECK (char_length(key) BETWEEN 1 AND 255),
  order_id text NOT NULL CHECK (char_length(order_id) BETWEEN 1 AND 255),
  status   text NOT NULL CHECK (status IN ('FULFILLED', 'REFUSED')),
  ref      text,
  at       timestamptz NOT NULL DEFAULT now()
);`;

// The channel's advisory lock class (ledger.pg.ts); key 1 guards this table's creation.
const LOCK_CLASS = 7_294_630;
const SCHEMA_LOCK_KEY = 1;

interface Row {
  key: string;
  order_id: string;
  status: FulfilmentRecord['status'];
  ref: string | null;
  at: Date;
}

const toRecord = (r: Row): FulfilmentRecord => ({
  key: r.key,
  orderId: r.order_id,
  status: r.status,
  ref: r.ref,
  at: r.at.toISOString(),
});

export async function createPgFulfilments(pool: Db): Promise<FulfilmentStore> {
  await inTx(pool, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1, $2)', [LOCK_CLASS, SCHEMA_LOCK_KEY]);
    await tx.query(SCHEMA);
  });
  const find = async (key: string) => {
    const result = await pool.query<Row>('SELECT * FROM channel_fulfilments WHERE key = $1', [key]);
    return result.rows[0] ? toRecord(result.rows[0]) : undefined;
  };
  return {
    find,
    async decide(key, orderId, refuse) {
      const draft = newFulfilment(key, orderId, refuse);
      await pool.query(
        'INSERT INTO channel_fulfilments (key, order_id, status, ref) VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO NOTHING',
        [key, orderId, draft.status, draft.ref],
      );
      const found = await find(key);
      if (!found) throw new Error(`fulfilment ${key} vanished after its insert`);
      return found;
    },
    async list() {
      return (await pool.query<Row>('SELECT * FROM channel_fulfilments ORDER BY at')).rows.map(toRecord);
    },
    async clear() {
      await pool.query('TRUNCATE channel_fulfilments');
    },
  };
}
