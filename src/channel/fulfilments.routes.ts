import type { FastifyInstance } from 'fastify';
import { perform, type ChannelDeps } from './channel.routes.ts';
import type { Outcome } from './ledger.ts';
import { channelSchemas } from './channel.openapi.ts';
import type { FulfilmentRecord, FulfilmentStore } from './fulfilments.ts';

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
