import Fastify from 'fastify';
import { principalOf, requirePrincipal, type Principal } from '../src/platform/auth.ts';
import type { Db } from '../src/platform/db.ts';
import { findSkuTerms, type SkuTerms } from '../src/stock/index.ts';
import { newOrderId, tryFastBatch, tryRefuseSoldOut, type FastBuyer } from '../src/orders/index.ts';
import type { BaselineServer, FlashpayServer } from './servers.ts';

// FLOORS (issue 16): what flashpay's rows cost on this machine with nothing of flashpay's request
// path around them. A bare Fastify route behind the same authentication hook batches the buyers
// of a SKU as the create's group commit does (setImmediate, one batch in flight, at most 256)
// and runs flashpay's own statement for the batch:
// - P1's floor, FLOOR_PATH: the one-statement batch (orders/create/batch.fast.repo.ts): the same five
//   rows per buyer (reservation, order, transition, line, key stored DONE with its 201), one
//   decrement, one durable commit per batch;
// - P2's floor, REFUSAL_FLOOR_PATH: the sold-out wave (orders/create/waves.repo.ts): one key row
//   per buyer, stored DONE with its 409, one durable commit per wave.
// Left out, and so the gap between a floor and flashpay: the body's schema and hostile-text checks,
// the request digest (a constant here), the in-process key guard, the SKU definition cache's
// checks and the 201 template's proof, replays and keys in flight, problem+json, the metrics and
// rate-limit hooks. A floor never sees a key twice, and P1's has ample stock: it never takes the
// paths that handle those. A floor that cannot reach a goal's figure shows the goal is out of reach
// for these rows on this machine, whatever the code around them.

export const FLOOR_PATH = '/floor/orders';
export const REFUSAL_FLOOR_PATH = '/floor/refusals';
/**
 * The least any durable sale can write, group-committed: the one-tx baseline's tables (bench_stock,
 * bench_orders: a decrement and an order row per buyer, no key, reservation, log or line), one
 * statement and one commit per batch. Not in `npm run bench` (bench/floors.harness.ts runs it): it
 * says what P1's ratio could be on this machine with one row per buyer instead of five.
 */
export const MINIMAL_FLOOR_PATH = '/floor/minimal';

const DIGEST = '0'.repeat(64);
const MAX_BATCH = 256;
// As the create's group commit (src/orders/create/batch.ts).
const MAX_IN_FLIGHT = 1;

type Answer = { status: number; body: string; location?: string };

interface Waiting {
  principal: Principal;
  key: string;
  resolve(answer: Answer): void;
  reject(error: unknown): void;
}

interface Lane {
  queue: Waiting[];
  inFlight: number;
  scheduled: boolean;
}

type RunBatch = (db: Db, tenantId: string, sku: string, batch: Waiting[]) => Promise<Answer[]>;

const definitions = new Map<string, SkuTerms>();

async function definitionOf(db: Db, tenantId: string, sku: string): Promise<SkuTerms> {
  const id = `${tenantId}\u0000${sku}`;
  let definition = definitions.get(id);
  if (!definition) {
    definition = await findSkuTerms(db, tenantId, sku);
    if (!definition) throw new Error(`floor: no SKU ${sku}`);
    definitions.set(id, definition);
  }
  return definition;
}

const createBatch: RunBatch = async (db, tenantId, sku, batch) => {
  const definition = await definitionOf(db, tenantId, sku);
  const now = new Date();
  const expiresAt = new Date(now.getTime() + definition.holdTtlMs);
  const parts = [
    '{"order_id":"',
    `","status":"CREATED","sku":${JSON.stringify(sku)},"quantity":1,"amount":${definition.price},` +
      `"reservation":{"expires_at":"${expiresAt.toISOString()}"}}`,
  ];
  const buyers: FastBuyer[] = batch.map((w) => {
    const orderId = newOrderId();
    return {
      userId: w.principal.userId,
      key: w.key,
      digest: DIGEST,
      orderId,
      reservationKey: `${orderId}/r1`,
      location: `/v1/orders/${orderId}`,
    };
  });
  const outcome = await tryFastBatch(db, {
    tenantId,
    sku,
    definition,
    buyers,
    expiresAt,
    createdParts: parts,
    refusalBody: '{"code":"SOLD_OUT"}',
    now,
    lockTimeoutMs: 5_000,
  });
  if (outcome.kind !== 'applied' || outcome.granted !== batch.length)
    throw new Error(`floor: the batch was not applied whole (${outcome.kind})`);
  return buyers.map((b) => ({ status: 201, body: parts.join(b.orderId), location: b.location }));
};

const refusalBatch: RunBatch = async (db, tenantId, sku, batch) => {
  const body = `{"code":"SOLD_OUT","sku":${JSON.stringify(sku)}}`;
  const buyers = batch.map((w) => ({ userId: w.principal.userId, key: w.key, digest: DIGEST, quantity: 1 }));
  const outcome = await tryRefuseSoldOut(db, tenantId, sku, buyers, body, new Date());
  if (outcome.available !== 0 || !batch.every((w) => outcome.refused.has(`${w.principal.userId}\n${w.key}`)))
    throw new Error('floor: the wave did not refuse every buyer');
  return batch.map(() => ({ status: 409, body }));
};

const minimalBatch: RunBatch = async (db, _tenantId, sku, batch) => {
  const result = await db.query<{ id: string }>({
    name: 'floor-minimal',
    text: `WITH taken AS (UPDATE bench_stock SET available = available - $2 WHERE id = $1 AND available >= $2 RETURNING 1)
           INSERT INTO bench_orders (stock_id, idempotency_key) SELECT $1, k FROM unnest($3::text[]) AS k, taken
           RETURNING id::text`,
    values: [sku, batch.length, batch.map((w) => w.key)],
  });
  if (result.rows.length !== batch.length) throw new Error('floor: the minimal batch was not applied whole');
  return result.rows.map((row) => ({ status: 201, body: `{"order_id":"${row.id}"}` }));
};

function lanes(db: Db, run: RunBatch) {
  const byId = new Map<string, Lane>();
  const schedule = (tenantId: string, sku: string, lane: Lane): void => {
    if (lane.scheduled || lane.inFlight >= MAX_IN_FLIGHT || lane.queue.length === 0) return;
    lane.scheduled = true;
    setImmediate(() => {
      lane.scheduled = false;
      if (lane.inFlight >= MAX_IN_FLIGHT || lane.queue.length === 0) return;
      const batch = lane.queue.splice(0, MAX_BATCH);
      lane.inFlight++;
      run(db, tenantId, sku, batch)
        .then(
          (answers) => batch.forEach((w, i) => w.resolve(answers[i]!)),
          (error: unknown) => batch.forEach((w) => w.reject(error)),
        )
        .finally(() => {
          lane.inFlight--;
          schedule(tenantId, sku, lane);
        });
    });
  };
  return (principal: Principal, sku: string, key: string) =>
    new Promise<Answer>((resolve, reject) => {
      const id = `${principal.tenantId}\u0000${sku}`;
      let lane = byId.get(id);
      if (!lane) byId.set(id, (lane = { queue: [], inFlight: 0, scheduled: false }));
      lane.queue.push({ principal, key, resolve, reject });
      schedule(principal.tenantId, sku, lane);
    });
}

/** Both floors on a listener of their own, sharing flashpay's pool and signer. */
export async function startFloorServer(flashpay: FlashpayServer): Promise<BaselineServer> {
  const { db, signer } = flashpay.deps;
  const app = Fastify({ logger: false });
  for (const [path, run] of [
    [FLOOR_PATH, createBatch],
    [REFUSAL_FLOOR_PATH, refusalBatch],
    [MINIMAL_FLOOR_PATH, minimalBatch],
  ] as const) {
    const enqueue = lanes(db, run);
    app.post<{ Body: { sku: string } }>(path, { onRequest: requirePrincipal(signer) }, async (request, reply) => {
      const answer = await enqueue(principalOf(request), request.body.sku, String(request.headers['idempotency-key']));
      if (answer.location) reply.header('location', answer.location);
      return reply.code(answer.status).type('application/json').send(answer.body);
    });
  }
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return { url, db, close: () => app.close() };
}
