import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { systemClock, type Clock } from '../platform/clock.ts';
import type { Db } from '../platform/db.ts';
import { AppError } from '../platform/errors.ts';
import { SIGNATURE_HEADER, verifySignature } from '../platform/signature.ts';
import type { OutboxEvent } from '../outbox/index.ts';
import { consumeBatch } from './fulfillment.batch.ts';
import { BATCH_BODY_LIMIT_BYTES, fulfillmentBatchSchema, fulfillmentEventSchema } from './fulfillment.schemas.ts';
import { consume, type ConsumeFn } from './fulfillment.service.ts';

export interface FulfillmentRoutesOptions {
  db: Db;
  /** Shared with the relay's http sink. */
  secret: string;
  /** Accepted distance of the signature's `t` from now (default 300 s, as for payment notifications). */
  toleranceSeconds?: number;
  clock?: Clock;
  /** Tests only (negative control C29-18); production never passes it, so `consume` is used. */
  consumeFn?: ConsumeFn;
}

/**
 * `POST /v1/fulfillment/events`: the webhook the relay's http sink delivers to. 200 `{effect}` once
 * the event is durably handled (APPLIED, DUPLICATE or STALE — all three are acknowledgements);
 * 400 BAD_SIGNATURE before anything is recorded; 500 on a storage error so the relay retries.
 * `POST /v1/fulfillment/events/batch`: the same for many events in one transaction (the http
 * sink's batch mode), 200 `{results}` with one outcome per event.
 */
export const fulfillmentRoutes: FastifyPluginAsync<FulfillmentRoutesOptions> = async (app, options) => {
  const apply = options.consumeFn ?? consume;
  const clock = options.clock ?? systemClock;
  const toleranceSeconds = options.toleranceSeconds ?? 300;

  // Before schema validation: an unsigned body is refused as a forgery, whatever its shape.
  async function verify(request: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const header = request.headers[SIGNATURE_HEADER];
    const nowSeconds = Math.floor(clock.now().getTime() / 1000);
    const check = verifySignature(
      options.secret,
      typeof header === 'string' ? header : undefined,
      request.rawBody ?? '',
      toleranceSeconds,
      nowSeconds,
    );
    if (!check.ok) throw new AppError('BAD_SIGNATURE', check.reason);
  }

  app.post('/v1/fulfillment/events', { schema: fulfillmentEventSchema, preValidation: verify }, async (request) => {
    const effect = await apply(options.db, request.body as OutboxEvent, clock);
    return { effect };
  });

  app.post(
    '/v1/fulfillment/events/batch',
    { schema: fulfillmentBatchSchema, preValidation: verify, bodyLimit: BATCH_BODY_LIMIT_BYTES },
    async (request) => ({
      results: await consumeBatch(options.db, (request.body as { events: OutboxEvent[] }).events, clock),
    }),
  );
};
