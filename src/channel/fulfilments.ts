import type { FastifyInstance } from 'fastify';
import { perform, type ChannelDeps } from './channel.routes.ts';
import { randomHex } from '../platform/ids.ts';
import type { Outcome } from './ledger.ts';
import { channelSchemas } from './channel.openapi.ts';

// The fake fulfilment provider (seed 002's ticket issuance): one fulfilment per key, idempotent —
// a repeat of the key gets the first answer, a refusal included (REFUSE is a refusal for good).
// In memory, or in the channel's database when its ledger is there (so `flashpay start` keeps them across a restart).

export interface FulfilmentRecord {
  key: string;
  orderId: string;
  status: 'FULFILLED' | 'REFUSED';
  ref: string | null;
  at: string;
}

/** Where the double keeps its fulfilments: memory, or the channel's own database (survives a restart). */
export interface FulfilmentStore {
  find(key: string): Promise<FulfilmentRecord | undefined>;
  /** The first answer for `key` wins; a repeat returns it unchanged. */
  decide(key: string, orderId: string, refuse: boolean): Promise<FulfilmentRecord>;
  list(): Promise<FulfilmentRecord[]>;
  clear(): Promise<void>;
}

export function newFulfilment(key: string, orderId: string, refuse: boolean): FulfilmentRecord {
  return {
    key,
    orderId,
    status: refuse ? 'REFUSED' : 'FULFILLED',
    ref: refuse ? null : `ful_${randomHex(12)}`,
    at: new Date().toISOString(),
  };
}

export class FulfilmentBook implements FulfilmentStore {
  private byKey = new Map<string, FulfilmentRecord>();

  async find(key: string): Promise<FulfilmentRecord | undefined> {
    return this.byKey.get(key);
  }

  async decide(key: string, orderId: string, refuse: boolean): Promise<FulfilmentRecord> {
    const found = this.byKey.get(key);
    if (found) return found;
    const record = newFulfilment(key, orderId, refuse);
    this.byKey.set(key, record);
    return record;
  }

  async list(): Promise<FulfilmentRecord[]> {
    return [...this.byKey.values()];
  }

  async clear(): Promise<void> {
    this.byKey.clear();
  }
}

function answer(record: FulfilmentRecord): Outcome {
  if (record.status === 'REFUSED')
    return { httpStatus: 422, body: { result: 'REFUSED', key: record.key, order_id: record.orderId } };
  return { httpStatus: 200, body: { result: 'FULFILLED', ref: record.ref, key: record.key, order_id: record.orderId } };
}

export function registerFulfilmentRoutes(app: FastifyInstance, deps: ChannelDeps, book: FulfilmentStore): void {
  app.post('/fulfilments', { schema: channelSchemas.fulfil }, async (request, reply) => {
    const body = request.body as { key: string; order_id: string };
    return perform(deps, request, reply, 'fulfil', body.order_id, async (hits) =>
      answer(await book.decide(body.key, body.order_id, hits.REFUSE !== undefined)),
    );
  });
  // The query that resolves a lost answer: what happened under this key, if anything.
  app.get('/fulfilments/*', { schema: channelSchemas.getFulfilment }, async (request) => {
    const k = decodeURIComponent((request.params as { '*': string })['*']);
    const found = await book.find(k);
    return found
      ? { key: k, status: found.status, ref: found.ref, order_id: found.orderId }
      : { key: k, status: 'NOT_FOUND' };
  });
  app.get('/fulfilments', { schema: channelSchemas.listFulfilments }, async () => ({
    fulfilments: (await book.list()).map((f) => ({
      key: f.key,
      order_id: f.orderId,
      status: f.status,
      ref: f.ref,
      at: f.at,
    })),
  }));
}
