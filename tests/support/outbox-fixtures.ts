import type { FastifyInstance } from 'fastify';
import type { Db, Executor } from '../../src/platform/db.ts';
import { buildHttp } from '../../src/platform/http.ts';
import { fulfillmentRoutes } from '../../src/fulfillment/fulfillment.routes.ts';
import type { ConsumeFn } from '../../src/fulfillment/fulfillment.service.ts';
import type { OutboxEvent, Sink } from '../../src/outbox/outbox.events.ts';
import { freshDatabase, type TestDatabase } from './db.ts';

// Rows the outbox and the consumer need, written with plain SQL so these tests do not depend on
// the orders domain. Every NOT NULL of migrations 001/002 is filled.

export const TEST_SECRET = 'test-fulfillment-secret';
const TENANT = 'tenant-outbox';
const SKU = 'sku-outbox';

export interface OrderSeed {
  orderId: string;
  status?: string;
  version?: number;
  userId?: string;
}

export async function seedOrder(db: Executor, seed: OrderSeed): Promise<void> {
  const now = new Date();
  const user = seed.userId ?? `user-${seed.orderId}`;
  await db.query(
    `INSERT INTO skus (tenant_id, sku, name, price, total, available, held, hold_ttl_ms, created_at)
     VALUES ($1, $2, 'Outbox test SKU', 1990, 1000000, 1000000, 0, 60000, $3) ON CONFLICT DO NOTHING`,
    [TENANT, SKU, now],
  );
  const status = seed.status ?? 'PAID';
  await db.query(
    `INSERT INTO reservations (tenant_id, request_key, user_id, sku, quantity, status, expires_at, created_at, updated_at)
     VALUES ($1, $2, $3, $4, 1, $5, $6, $6, $6)`,
    [TENANT, `res-${seed.orderId}`, user, SKU, status === 'PAID' ? 'CONFIRMED' : 'HELD', now],
  );
  await db.query(
    `INSERT INTO orders (order_id, tenant_id, user_id, sku, quantity, amount, status, version, reservation_key, created_at, updated_at)
     VALUES ($1, $2, $3, $4, 1, 1990, $5, $6, $7, $8, $8)`,
    [seed.orderId, TENANT, user, SKU, status, seed.version ?? 4, `res-${seed.orderId}`, now],
  );
}

/** An outbox row as orders.transition would write it; returns its event id. */
export async function insertEvent(db: Executor, orderId: string, eventType: string, version: number): Promise<string> {
  const status = eventType.replace(/^ORDER_/, '');
  const payload = {
    order_id: orderId,
    tenant_id: TENANT,
    user_id: `user-${orderId}`,
    sku: SKU,
    quantity: 1,
    amount: 1990,
    status,
    version,
  };
  const result = await db.query<{ event_id: string }>(
    `INSERT INTO outbox (order_id, event_type, order_version, payload, created_at, next_attempt_at)
     VALUES ($1, $2, $3, $4, now(), now() - interval '1 second') RETURNING event_id::text`,
    [orderId, eventType, version, JSON.stringify(payload)],
  );
  return result.rows[0]!.event_id;
}

/** `n` orders in `status` at version 4, each with its ORDER_<status> event. */
export async function seedOrdersWithEvents(
  db: Executor,
  prefix: string,
  n: number,
  status = 'PAID',
): Promise<{ orderId: string; eventId: string }[]> {
  const seeded = [];
  for (let i = 1; i <= n; i++) {
    const orderId = `${prefix}-${String(i).padStart(3, '0')}`;
    await seedOrder(db, { orderId, status, version: 4 });
    seeded.push({ orderId, eventId: await insertEvent(db, orderId, `ORDER_${status}`, 4) });
  }
  return seeded;
}

export async function outboxRows(db: Executor, prefix: string) {
  const result = await db.query<{
    event_id: string;
    order_id: string;
    order_version: number;
    published_at: Date | null;
    claimed_by: string | null;
    attempts: number;
    dead_at: Date | null;
    last_error: string | null;
  }>(
    `SELECT event_id::text, order_id, order_version, published_at, claimed_by, attempts, dead_at, last_error
     FROM outbox WHERE order_id LIKE $1 ORDER BY event_id`,
    [`${prefix}-%`],
  );
  return result.rows;
}

/** Effect → count over the consumer's arrival log for one prefix of order ids. */
export async function effectCounts(db: Executor, prefix: string): Promise<Record<string, number>> {
  const result = await db.query<{ effect: string; n: number }>(
    `SELECT effect, count(*) AS n FROM ful_received WHERE order_id LIKE $1 GROUP BY effect ORDER BY effect`,
    [`${prefix}-%`],
  );
  return Object.fromEntries(result.rows.map((r) => [r.effect, r.n]));
}

export async function shipCounts(db: Executor, prefix: string): Promise<Record<string, number>> {
  const result = await db.query<{ order_id: string; ship_count: number }>(
    `SELECT order_id, ship_count FROM fulfillment WHERE order_id LIKE $1 ORDER BY order_id`,
    [`${prefix}-%`],
  );
  return Object.fromEntries(result.rows.map((r) => [r.order_id, r.ship_count]));
}

/** Scripted behaviour of the test consumer, changed by the test while it runs. */
export interface ConsumerScript {
  /** Answer 503 to this many more requests (a consumer that is down for a while). */
  refuseNext: number;
  /** Event ids answered with 500 every time (a poison event). */
  reject: Set<string>;
  /** Requests seen, refused ones included. */
  requests: number;
}

export interface WebhookConsumer {
  url: string;
  app: FastifyInstance;
  script: ConsumerScript;
  close(): Promise<void>;
}

/** The real fulfillment webhook on 127.0.0.1:<random port>, with a script hook in front of it. */
export async function startWebhookConsumer(db: Db, options: { consumeFn?: ConsumeFn } = {}): Promise<WebhookConsumer> {
  const app = buildHttp({ bodyLimitBytes: 64 * 1024, logLevel: 'silent' });
  const script: ConsumerScript = { refuseNext: 0, reject: new Set(), requests: 0 };
  app.addHook('preHandler', async (request, reply) => {
    script.requests++;
    if (script.refuseNext > 0) {
      script.refuseNext--;
      return reply.code(503).send({ error: 'consumer down (scripted)' });
    }
    const eventId = (request.body as { event_id?: string } | undefined)?.event_id;
    if (eventId !== undefined && script.reject.has(eventId))
      return reply.code(500).send({ error: 'poison (scripted)' });
  });
  await app.register(fulfillmentRoutes, { db, secret: TEST_SECRET, consumeFn: options.consumeFn });
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  return { url: `${address}/v1/fulfillment/events`, app, script, close: () => app.close() };
}

export interface SinkCall {
  event: OutboxEvent;
  startedAt: number;
  ackedAt: number;
}

/** An in-memory sink that records the logical order of delivery starts and acks. */
export function recordingSink(maxDelayMs: number): Sink & { calls: SinkCall[] } {
  let tick = 0;
  const calls: SinkCall[] = [];
  return {
    calls,
    async deliver(event) {
      const startedAt = ++tick;
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * maxDelayMs)));
      calls.push({ event, startedAt, ackedAt: ++tick });
    },
    async close() {},
  };
}

export { waitFor } from './poll.ts';

/** A fresh database with the webhook consumer on it, for a test file's beforeAll; close() in afterAll. */
export async function openConsumer(): Promise<{ db: TestDatabase; consumer: WebhookConsumer; close(): Promise<void> }> {
  const db = await freshDatabase();
  const consumer = await startWebhookConsumer(db.pool);
  return {
    db,
    consumer,
    async close() {
      await consumer.close();
      await db.drop();
    },
  };
}
