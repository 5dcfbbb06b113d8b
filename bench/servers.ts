import { MAX_ORDER_AMOUNT_MINOR } from '../src/platform/money.ts';
import { randomBytes } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { buildApp, type RouteModule } from '../src/app.ts';
import type { AppDeps } from '../src/app.deps.ts';
import { principalOf, requirePrincipal, tokenSigner } from '../src/platform/auth.ts';
import { keyedDeps } from '../src/app.deps.ts';
import { executeKeyed, requestDigest } from '../src/idempotency/index.ts';
import { createOrderResponse, keyedCreate } from '../src/orders/index.ts';
import { systemClock } from '../src/platform/clock.ts';
import type { Config } from '../src/platform/config.ts';
import { createPool, inTx, type Db } from '../src/platform/db.ts';

export const BENCH_TENANT = 'bench';

function urlOf(app: FastifyInstance): string {
  const address = app.server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

/** The real API (buildApp, real deps, system clock) on 127.0.0.1:0; no background workers. */
export interface FlashpayServer {
  url: string;
  deps: AppDeps;
  /** A buyer token for the bench tenant. */
  buyerToken(userId: string): Promise<string>;
  close(): Promise<void>;
}

export async function startFlashpayServer(
  databaseUrl: string,
  config: Config,
  extra: RouteModule[] = [],
  /** The payment provider pays go to (W1's card pays); none by default. */
  channel?: { url: string; secret: string },
): Promise<FlashpayServer> {
  const db = createPool(databaseUrl, config.poolSize);
  const signer = tokenSigner(`bench-${randomBytes(16).toString('hex')}`);
  const deps: AppDeps = {
    db,
    clock: systemClock,
    config: { ...config, logLevel: 'silent' },
    signer,
    notifySecret: channel?.secret ?? `bench-${randomBytes(16).toString('hex')}`,
    eventsSecret: `bench-${randomBytes(16).toString('hex')}`,
    // Order creation never calls the payment channel; nothing listens here unless W1 gives one.
    channelUrl: channel?.url ?? 'http://127.0.0.1:1',
    notifyUrl: '',
  };
  let app: FastifyInstance;
  try {
    app = await buildApp(deps, extra);
    await app.listen({ host: '127.0.0.1', port: 0 });
  } catch (error) {
    await db.end();
    throw error;
  }
  const url = urlOf(app);
  deps.notifyUrl = `${url}/v1/payment-notifications`;
  return {
    url,
    deps,
    buyerToken: (userId) => signer.sign({ tenantId: BENCH_TENANT, userId, scope: 'buyer' }, 24 * 3600),
    async close() {
      await app.close();
      await db.end();
    },
  };
}

// The baseline's own tables: what a minimal "decrement stock, record order" service needs, nothing else.
const BASELINE_SCHEMA = `
CREATE TABLE IF NOT EXISTS bench_stock (id text PRIMARY KEY, stock integer NOT NULL, available integer NOT NULL);
CREATE TABLE IF NOT EXISTS bench_orders (
  id bigserial PRIMARY KEY, stock_id text NOT NULL, idempotency_key text NOT NULL, created_at timestamptz NOT NULL DEFAULT now())`;

export const BASELINE_PATH = '/baseline/orders';

export interface BaselineServer {
  url: string;
  db: Db;
  close(): Promise<void>;
}

/**
 * The baseline: one Fastify route, one transaction per buyer — a conditional UPDATE of the stock
 * row (the row lock queues buyers of a hot SKU, `available >= 1` refuses the one too many) and an
 * INSERT of the order row. No auth, no idempotency record, no reservation, no transition log.
 */
export async function startBaselineServer(databaseUrl: string, poolSize: number): Promise<BaselineServer> {
  const db = createPool(databaseUrl, poolSize);
  await db.query(BASELINE_SCHEMA);
  const app = Fastify({ logger: false });
  app.post<{ Body: { sku: string } }>(BASELINE_PATH, async (request, reply) => {
    const client = await db.connect();
    try {
      await client.query('BEGIN');
      const taken = await client.query(
        'UPDATE bench_stock SET available = available - 1 WHERE id = $1 AND available >= 1',
        [request.body.sku],
      );
      if (taken.rowCount !== 1) {
        await client.query('ROLLBACK');
        return reply.code(409).send({ code: 'SOLD_OUT' });
      }
      const key = String(request.headers['idempotency-key'] ?? '');
      const order = await client.query<{ id: string }>(
        'INSERT INTO bench_orders (stock_id, idempotency_key) VALUES ($1, $2) RETURNING id::text',
        [request.body.sku, key],
      );
      await client.query('COMMIT');
      return reply.code(201).send({ order_id: order.rows[0]?.id });
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return {
    url: urlOf(app),
    db,
    async close() {
      await app.close();
      await db.end();
    },
  };
}

export const BARE_PATH = '/bare/orders';
export const SINGLE_KEYED_PATH = '/single/orders-keyed';
export const SINGLE_UNKEYED_PATH = '/single/orders-unkeyed';
/** P5's "before": the keyed one-transaction create with the claim's transaction not pipelined. */
export const SINGLE_KEYED_UNPIPELINED_PATH = '/single/orders-keyed-unpipelined';
/** P5's other "before": pipelined, but the key inserted PROCESSING first and completed by an UPDATE. */
export const SINGLE_KEYED_INSERT_FIRST_PATH = '/single/orders-keyed-insert-first';

/**
 * The ceiling: a Fastify route with flashpay's authentication hook (same signer, same verified-
 * token cache) that answers 201 with a small JSON body and never touches the database. Next to
 * it, for P5, flashpay's one-transaction create with and without the key layer (no batching).
 */
export async function startBareServer(flashpay: FlashpayServer): Promise<BaselineServer> {
  const { deps } = flashpay;
  const auth = requirePrincipal(deps.signer);
  const app = Fastify({ logger: false });
  app.post<{ Body: { sku: string; quantity?: number } }>(BARE_PATH, { onRequest: auth }, async (request, reply) =>
    reply.code(201).send({ order_id: 'bare', sku: request.body.sku, status: 'CREATED' }),
  );
  const lineOf = (body: { sku: string; quantity?: number }) => [{ sku: body.sku, quantity: body.quantity ?? 1 }];
  app.post<{ Body: { sku: string; quantity?: number } }>(
    SINGLE_UNKEYED_PATH,
    { onRequest: auth },
    async (request, reply) => {
      const principal = principalOf(request);
      const answer = await inTx(deps.db, (tx) =>
        createOrderResponse(tx, principal, lineOf(request.body), deps.clock.now(), undefined, MAX_ORDER_AMOUNT_MINOR),
      );
      return reply.code(answer.status).type('application/json').send(answer.body);
    },
  );
  app.post<{ Body: { sku: string; quantity?: number } }>(
    SINGLE_KEYED_PATH,
    { onRequest: auth },
    async (request, reply) => {
      const principal = principalOf(request);
      const key = String(request.headers['idempotency-key'] ?? '');
      const lines = lineOf(request.body);
      const answer = await executeKeyed(keyedDeps(deps), {
        scope: { tenantId: principal.tenantId, userId: principal.userId, operation: 'create_order', key },
        digest: requestDigest('create_order', {}, lines[0]),
        ...keyedCreate(principal, lines, () => deps.clock.now(), MAX_ORDER_AMOUNT_MINOR),
      });
      return reply
        .code(answer.status)
        .header('Idempotent-Replayed', String(answer.replayed))
        .type('application/json')
        .send(answer.body);
    },
  );
  // The two "before" forms of the keyed create: insert-first claims (PROCESSING, then the UPDATE).
  for (const [path, pipeline] of [
    [SINGLE_KEYED_UNPIPELINED_PATH, false],
    [SINGLE_KEYED_INSERT_FIRST_PATH, true],
  ] as const)
    app.post<{ Body: { sku: string; quantity?: number } }>(path, { onRequest: auth }, async (request, reply) => {
      const principal = principalOf(request);
      const key = String(request.headers['idempotency-key'] ?? '');
      const lines = lineOf(request.body);
      const answer = await executeKeyed(
        { ...keyedDeps(deps), pipeline },
        {
          scope: { tenantId: principal.tenantId, userId: principal.userId, operation: 'create_order', key },
          digest: requestDigest('create_order', {}, lines[0]),
          start: async (tx) => ({
            final: await createOrderResponse(tx, principal, lines, deps.clock.now(), undefined, MAX_ORDER_AMOUNT_MINOR),
          }),
        },
      );
      return reply.code(answer.status).type('application/json').send(answer.body);
    });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { url: urlOf(app), db: deps.db, close: () => app.close() };
}
