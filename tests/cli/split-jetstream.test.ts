import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { describe, expect } from 'vitest';
import { brokerTest } from '../outbox/broker-gate.ts';
import { stockStream } from '../../src/orders/queued/transports/jetstream.ts';
import { runSplitSale } from './split-sale.ts';
import { everyOf } from '../support/every.ts';

describe('three processes, split databases, over JetStream', () => {
  brokerTest(
    'SP-03 the split-database sale of SP-01 over JetStream: the shops never reach the stock database; both durable consumers acked everything',
    'NATS_URL',
    async (url) => {
      const prefix = `flashpay.stock.s${randomBytes(4).toString('hex')}`;
      const names = stockStream(prefix);
      const nc = await connect({ servers: url });
      const jsm = await jetstreamManager(nc);
      // Messages neither delivered nor acked, per durable consumer.
      const open = async () =>
        Promise.all(
          [names.durableRequests, names.durableResults].map(async (durable) => {
            const info = await jsm.consumers.info(names.stream, durable);
            return info.num_pending + info.num_ack_pending;
          }),
        );
      try {
        await runSplitSale(
          {
            FLASHPAY_STOCK_TRANSPORT: 'jetstream',
            NATS_URL: url,
            FLASHPAY_STOCK_QUEUE_PREFIX: prefix,
            FLASHPAY_STOCK_DATABASE_URL: '',
            // The killed stock service's unacked messages come back after this, not the default 30 s.
            FLASHPAY_STOCK_ACK_WAIT_MS: '2000',
          },
          { drained: async () => everyOf(await open().catch(() => [-1]), (n) => n === 0) },
        );
        expect(await open()).toEqual([0, 0]);
      } finally {
        await jsm.streams.delete(names.stream).catch(() => undefined);
        await nc.close();
      }
    },
    150_000,
  );
});
