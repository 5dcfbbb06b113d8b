import Fastify from 'fastify';
import { principalOf, requirePrincipal, type Principal } from '../src/platform/auth.ts';
import type { Db } from '../src/platform/db.ts';
import { findSkuTerms, type SkuTerms } from '../src/inventory/index.ts';
import { newOrderId, tryFastBatch, type FastBuyer } from '../src/orders/index.ts';
import type { BaselineServer, FlashpayServer } from './servers.ts';

// P1's FLOOR (issue 16): what flashpay's rows cost on this machine with nothing of flashpay's
// request path around them. A bare Fastify route behind the same authentication hook batches the
// buyers of a SKU exactly as the create's group commit does (setImmediate, two batches in flight,
// at most 256) and runs flashpay's own one-statement batch (orders.batch.fast.repo.ts): the same
// five rows per buyer (reservation, order, transition, line, key stored DONE with its 201) and one
// decrement, one durable commit per batch. Left out, and so the gap between this and flashpay:
// the body's schema and hostile-text checks, the request digest, the in-process key guard, the
// SKU definition cache and the 201 template's proof, replays and keys in flight, refusals, the
// problem+json and metrics hooks. No buyer's key is ever seen twice here, and the SKU has ample
// stock: the floor never takes the paths that handle those.

export const FLOOR_PATH = '/floor/orders';

const DIGEST = '0'.repeat(64);
const MAX_BATCH = 256;
const MAX_IN_FLIGHT = 2;

interface Waiting {
  principal: Principal;
  key: string;
  resolve(answer: { status: number; body: string; location: string }): void;
  reject(error: unknown): void;
}

interface Lane {
  queue: Waiting[];
  inFlight: number;
  scheduled: boolean;
}

const definitions = new Map<string, SkuTerms>();

async function runBatch(db: Db, tenantId: string, sku: string, batch: Waiting[]): Promise<void> {
  const id = `${tenantId}\u0000${sku}`;
  let definition = definitions.get(id);
  if (!definition) {
    definition = await findSkuTerms(db, tenantId, sku);
    if (!definition) throw new Error(`floor: no SKU ${sku}`);
    definitions.set(id, definition);
  }
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
  for (const [i, w] of batch.entries())
    w.resolve({ status: 201, body: parts.join(buyers[i]!.orderId), location: buyers[i]!.location });
}

/** The floor route on a listener of its own, sharing flashpay's pool and signer. */
export async function startFloorServer(flashpay: FlashpayServer): Promise<BaselineServer> {
  const { db, signer } = flashpay.deps;
  const lanes = new Map<string, Lane>();
  const schedule = (tenantId: string, sku: string, lane: Lane): void => {
    if (lane.scheduled || lane.inFlight >= MAX_IN_FLIGHT || lane.queue.length === 0) return;
    lane.scheduled = true;
    setImmediate(() => {
      lane.scheduled = false;
      if (lane.inFlight >= MAX_IN_FLIGHT || lane.queue.length === 0) return;
      const batch = lane.queue.splice(0, MAX_BATCH);
      lane.inFlight++;
      runBatch(db, tenantId, sku, batch)
        .catch((error: unknown) => batch.forEach((w) => w.reject(error)))
        .finally(() => {
          lane.inFlight--;
          schedule(tenantId, sku, lane);
        });
    });
  };
  const app = Fastify({ logger: false });
  app.post<{ Body: { sku: string } }>(FLOOR_PATH, { onRequest: requirePrincipal(signer) }, async (request, reply) => {
    const principal = principalOf(request);
    const sku = request.body.sku;
    const id = `${principal.tenantId}\u0000${sku}`;
    let lane = lanes.get(id);
    if (!lane) lanes.set(id, (lane = { queue: [], inFlight: 0, scheduled: false }));
    const answer = await new Promise<{ status: number; body: string; location: string }>((resolve, reject) => {
      lane.queue.push({ principal, key: String(request.headers['idempotency-key']), resolve, reject });
      schedule(principal.tenantId, sku, lane);
    });
    return reply.code(answer.status).header('location', answer.location).type('application/json').send(answer.body);
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return { url, db, close: () => app.close() };
}
