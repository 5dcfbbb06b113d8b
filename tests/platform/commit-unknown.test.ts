import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CommitOutcomeUnknownError,
  createPool,
  inTx,
  isConnectionError,
  isDatabaseFault,
  type Db,
} from '../../src/platform/db.ts';
import { pgbouncerFromEnv } from '../../src/platform/pgbouncer.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { createSku, startPaymentStack, TENANT, type PaymentStack } from '../support/payments.ts';
import { startProxy, type CuttableProxy } from '../support/tcp-proxy.ts';

// Proves (issue 50) that a COMMIT whose answer never comes back (a partition between flashpay and
// its database, seen as pg's "Query read timeout") is CommitOutcomeUnknownError, never a plain
// failure, while an answer lost before COMMIT is a known failure that wrote nothing; and that the
// API answers such a create as unknown (503, outcome "unknown") and a keyed retry converges on the
// order that did commit.
const READ_TIMEOUT_MS = 600;
const CONNECT_TIMEOUT_MS = 1_000;

describe('a COMMIT whose answer is lost is unknown, never failed (issue 50)', () => {
  let real: TestDatabase;
  let proxy: CuttableProxy;
  let pool: Db;
  beforeAll(async () => {
    real = await freshDatabase();
    await real.pool.query('CREATE TABLE uc_probe (id text PRIMARY KEY)');
    const target = new URL(real.url);
    proxy = await startProxy({ host: target.hostname, port: Number(target.port) });
    pool = createPool(proxy.url(real.url), 4, CONNECT_TIMEOUT_MS, pgbouncerFromEnv(), {
      queryTimeoutMs: READ_TIMEOUT_MS,
    });
  });
  afterAll(async () => {
    await pool?.end();
    await proxy?.close();
    await real?.drop();
  });
  const rows = async (id: string) =>
    (await real.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM uc_probe WHERE id = $1', [id])).rows[0]?.n;

  it('UC-01: the answer to COMMIT is swallowed: CommitOutcomeUnknownError, and the row did commit', async () => {
    const error = await inTx(pool, async (tx) => {
      await tx.query('INSERT INTO uc_probe (id) VALUES ($1)', ['uc-01']);
      proxy.swallowAnswers(); // COMMIT still reaches the server; its answer never comes back
    }).catch((e: unknown) => e);
    proxy.restore();
    expect(error).toBeInstanceOf(CommitOutcomeUnknownError);
    expect((error as Error).message).toMatch(/Query read timeout/);
    expect(isDatabaseFault(error)).toBe(true);
    // Unknown was the truth: the server committed. A plain failure here would have been a lie.
    expect(await rows('uc-01')).toBe(1);
  });

  it('UC-02: an answer lost before COMMIT is a known failure (a database fault), and nothing committed', async () => {
    const error = await inTx(pool, async (tx) => {
      proxy.swallowAnswers();
      await tx.query('INSERT INTO uc_probe (id) VALUES ($1)', ['uc-02']);
    }).catch((e: unknown) => e);
    proxy.restore();
    expect(error).not.toBeInstanceOf(CommitOutcomeUnknownError);
    expect(isConnectionError(error)).toBe(true); // a read timeout: 503 "nothing was executed", never 500
    // The timed-out connection was discarded, not rolled back by a ROLLBACK queued behind its
    // statement: the server ends the transaction when the connection goes.
    expect(await rows('uc-02')).toBe(0);
    await inTx(pool, (tx) => tx.query('INSERT INTO uc_probe (id) VALUES ($1)', ['uc-02-after']));
    expect(await rows('uc-02-after')).toBe(1);
  });
});

describe('the API answers a lost COMMIT as unknown and converges by keyed retry (issue 50)', () => {
  let s: PaymentStack;
  let real: TestDatabase;
  let proxy: CuttableProxy;
  // Armed, the next COMMIT the service sends (on any pooled connection) is its last answered
  // statement: the proxy swallows from there on. The client is pg's own; only its query is watched.
  let cutAtCommit = false;
  beforeAll(async () => {
    real = await freshDatabase();
    const target = new URL(real.url);
    proxy = await startProxy({ host: target.hostname, port: Number(target.port) });
    const pool = createPool(proxy.url(real.url), 8, CONNECT_TIMEOUT_MS, pgbouncerFromEnv(), {
      queryTimeoutMs: 1_500,
    });
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text;
        if (cutAtCommit && text === 'COMMIT') {
          cutAtCommit = false;
          proxy.swallowAnswers();
        }
        return query(...args);
      };
    });
    s = await startPaymentStack({
      db: { ...real, pool, drop: async () => undefined },
      config: { rateLimitPerMinute: 0 },
    });
  });
  afterAll(async () => {
    await s?.close();
    await s?.db.pool.end();
    await proxy?.close();
    await real?.drop();
  });

  it('UC-03: an order whose COMMIT answer is swallowed is 503 outcome "unknown"; the keyed retry returns that same order, held once', async () => {
    // An order of two lines is one transaction (orders/create/one.ts), committed by inTx.
    await createSku(s, { sku: 'uc3', stock: 5 });
    await createSku(s, { sku: 'uc3b', stock: 5 });
    const buyer = await s.token(TENANT, 'uc3-buyer');
    const body = { lines: [{ sku: 'uc3' }, { sku: 'uc3b' }] };
    const order = () => s.call('POST', '/v1/orders', { token: buyer, body, headers: { 'idempotency-key': 'uc3-k' } });
    cutAtCommit = true;
    let first;
    try {
      first = await order();
    } finally {
      proxy.restore();
    }
    expect(cutAtCommit).toBe(false); // the create's COMMIT was the one cut
    expect(first.status).toBe(503);
    expect(first.body.code).toBe('UNAVAILABLE');
    expect(first.body.outcome).toBe('unknown');
    expect(first.headers.get('retry-after')).toBe('1');
    const retry = await order();
    expect(retry.status).toBe(201);
    const orders = await real.pool.query<{ order_id: string }>(
      `SELECT DISTINCT order_id FROM orders WHERE user_id = 'uc3-buyer'`,
    );
    expect(orders.rows).toHaveLength(1); // once, whichever way the cut COMMIT went
    expect(retry.body.order_id).toBe(orders.rows[0]!.order_id);
    const skus = await real.pool.query<{ available: number }>(
      `SELECT available FROM skus WHERE sku IN ('uc3', 'uc3b') ORDER BY sku`,
    );
    expect(skus.rows.map((r) => r.available)).toEqual([4, 4]);
  });
});
