import { randomBytes } from 'node:crypto';
import { describe, expect } from 'vitest';
import { brokerTest } from '../outbox/broker-gate.ts';
import { createSku, skuCounters, TENANT } from '../support/fixtures.ts';
import { waitFor } from '../support/poll.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { createStockPump } from '../../src/orders/queued/pipeline.ts';
import amqp from 'amqplib';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { amqpStockTransport, stockQueues } from '../../src/orders/queued/transports/amqp.ts';
import { jetStreamStockTransport, stockStream } from '../../src/orders/queued/transports/jetstream.ts';
import type { StockTransport } from '../../src/orders/queued/transports/transport.ts';
import type { StockRequest } from '../../src/stock/index.ts';
import { everyOf } from '../support/every.ts';

type MakeTransport = (s: Stack) => StockTransport;

/**
 * Redeliver on purpose over a real broker: every request and every result is published three
 * times, and a release is sent before its order could have asked for one. Proves the inboxes
 * absorb duplicates and reordering: one hold, one release, one transition each.
 */
async function duplicatedAndReordered(make: MakeTransport, brokerDedups: boolean): Promise<void> {
  const s = await startStack();
  const transport = make(s);
  try {
    const pump = createStockPump({
      shopDb: s.deps.db,
      stockDb: s.deps.db,
      clock: s.clock,
      leaseMs: 30_000,
      resendAfterMs: 60_000,
      transport,
    });
    await createSku(s, { sku: 'bq', stock: 3, price: 500 });
    const buyer = await s.token(TENANT, 'bq-user');
    const placed = await s.call('POST', '/v1/orders', {
      token: buyer,
      body: { sku: 'bq' },
      headers: { 'idempotency-key': 'bq-1', prefer: 'respond-async' },
    });
    const orderId = placed.body.order_id as string;
    const status = async () =>
      (await s.db.pool.query<{ status: string }>('SELECT status FROM orders WHERE order_id = $1', [orderId])).rows[0]
        ?.status;
    const request = (
      await s.db.pool.query<{
        request_key: string;
        order_id: string;
        event_type: string;
        payload: Record<string, unknown>;
      }>('SELECT request_key, order_id, event_type, payload FROM stock_requests_out WHERE order_id = $1', [orderId])
    ).rows[0] as StockRequest;

    // A release for this order arrives first (reordered): nothing is held yet, so it releases nothing.
    const early: StockRequest = {
      ...request,
      request_key: `${orderId}/release`,
      event_type: 'STOCK_RELEASE_REQUESTED',
    };
    await transport.sendRequests([early, early], s.clock.now());
    await transport.sendRequests([request, request, request], s.clock.now());
    const results = async (type: string, effect?: string) =>
      (
        await s.db.pool.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM stock_results_in WHERE order_id = $1 AND event_type = $2 AND ($3::text IS NULL OR effect = $3)',
          [orderId, type, effect ?? null],
        )
      ).rows[0]?.n ?? 0;
    await waitFor(
      async () => {
        await pump.drain();
        return ((await status()) === 'CREATED' && (await results('STOCK_RELEASED')) > 0) || undefined;
      },
      'the order CREATED over the broker',
      30_000,
      50,
    );
    // Copies that arrive after the request was applied are answered with its first result, again.
    // JetStream drops them at publish (same Msg-Id inside the duplicate window: PubAck duplicate, nothing stored).
    await transport.sendRequests([request, request], s.clock.now());
    if (!brokerDedups) {
      // Settled: all six copies in the inbox, at least the two late ones replayed, every result through the shop's inbox.
      // (The relay's own copy is replayed too when it lands after the apply: 2 or 3 replays, each IGNORED.)
      await waitFor(
        async () => {
          await pump.drain();
          const q = await s.db.pool.query<{ deliveries: number; sent: number; received: number }>(
            `SELECT (SELECT deliveries FROM stock_inbox WHERE request_key = $1 || '/deduct') AS deliveries,
                  (SELECT count(*)::int FROM stock_outbox WHERE order_id = $1) AS sent,
                  (SELECT count(*)::int FROM stock_results_in WHERE order_id = $1) AS received`,
            [orderId],
          );
          const r = q.rows[0];
          return (
            (r && r.deliveries === 6 && r.sent === r.received && (await results('STOCK_RESERVED', 'IGNORED')) >= 2) ||
            undefined
          );
        },
        'the replayed results through the shop inbox',
        30_000,
        50,
      );
    }

    expect(await status()).toBe('CREATED');
    expect(await skuCounters(s, 'bq')).toMatchObject({ available: 2, held: 1 });
    const inbox = await s.db.pool.query<{ request_key: string; deliveries: number; result_type: string }>(
      'SELECT request_key, deliveries, result_type FROM stock_inbox WHERE order_id = $1 ORDER BY request_key',
      [orderId],
    );
    // RabbitMQ delivers every copy (five sent here, one by the relay) and the inbox absorbs them; JetStream stores one.
    expect(inbox.rows).toEqual([
      { request_key: `${orderId}/deduct`, deliveries: brokerDedups ? 1 : 6, result_type: 'STOCK_RESERVED' },
      { request_key: `${orderId}/release`, deliveries: brokerDedups ? 1 : 2, result_type: 'STOCK_RELEASED' },
    ]);
    const effects = await s.db.pool.query<{ event_type: string; effect: string; n: number }>(
      'SELECT event_type, effect, count(*)::int AS n FROM stock_results_in WHERE order_id = $1 GROUP BY 1, 2 ORDER BY 1, 2',
      [orderId],
    );
    // The early RELEASED met a PENDING or CREATED order: recorded, ignored, and it released nothing.
    const reserved = effects.rows.filter((r) => r.event_type === 'STOCK_RESERVED');
    expect(reserved[0]).toEqual({ event_type: 'STOCK_RESERVED', effect: 'APPLIED', n: 1 });
    if (brokerDedups) expect(reserved).toHaveLength(1);
    else expect(reserved[1]?.effect === 'IGNORED' && [2, 3].includes(reserved[1].n)).toBe(true);
    expect(
      everyOf(
        effects.rows.filter((r) => r.event_type === 'STOCK_RELEASED'),
        (r) => r.effect === 'IGNORED',
      ),
    ).toBe(true);
    const transitions = await s.db.pool.query<{ to_status: string }>(
      'SELECT to_status FROM order_transitions WHERE order_id = $1 ORDER BY version',
      [orderId],
    );
    expect(transitions.rows.map((r) => r.to_status)).toEqual(['PENDING', 'CREATED']);
  } finally {
    await transport.close();
    await s.close();
  }
}

const uniquePrefix = () => `flashpay.stock.t${randomBytes(4).toString('hex')}`;

describe('queued orders over a real broker: duplicated and reordered deliveries', () => {
  brokerTest(
    'Q-B1 RabbitMQ: each request and result delivered several times and out of order: one hold, no release of a hold that came later',
    'AMQP_URL',
    async (url) => {
      const prefix = uniquePrefix();
      try {
        await duplicatedAndReordered(
          (s) =>
            amqpStockTransport({
              url,
              prefix,
              shopDb: s.deps.db,
              stockDb: s.deps.db,
              consume: { requests: true, results: true },
            }),
          false,
        );
      } finally {
        const connection = await amqp.connect(url);
        const channel = await connection.createChannel();
        for (const queue of Object.values(stockQueues(prefix))) await channel.deleteQueue(queue).catch(() => undefined);
        await connection.close();
      }
    },
    60_000,
  );
  brokerTest(
    'Q-B2 JetStream: the same; Msg-Id dedup drops the copies the stream sees in its window',
    'NATS_URL',
    async (url) => {
      const prefix = uniquePrefix();
      try {
        await duplicatedAndReordered(
          (s) =>
            jetStreamStockTransport({
              servers: url,
              prefix,
              shopDb: s.deps.db,
              stockDb: s.deps.db,
              consume: { requests: true, results: true },
            }),
          true,
        );
      } finally {
        const nc = await connect({ servers: url });
        await (await jetstreamManager(nc)).streams.delete(stockStream(prefix).stream).catch(() => undefined);
        await nc.close();
      }
    },
    60_000,
  );
});
