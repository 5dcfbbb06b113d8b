import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { describe, expect } from 'vitest';
import { brokerTest } from '../outbox/broker-gate.ts';
import { stockStream } from '../../src/stock.jetstream.ts';
import { runSplitSale } from './split-sale.ts';

describe('three processes, split databases, over JetStream', () => {
  brokerTest(
    'SP-03 the split-database sale of SP-01 over JetStream: the shops never reach the stock database; both durable consumers acked everything',
    'NATS_URL',
    async (url) => {
      const prefix = `flashpay.stock.s${randomBytes(4).toString('hex')}`;
      const names = stockStream(prefix);
      try {
        await runSplitSale({
          FLASHPAY_STOCK_TRANSPORT: 'jetstream',
          NATS_URL: url,
          FLASHPAY_STOCK_QUEUE_PREFIX: prefix,
          FLASHPAY_STOCK_DATABASE_URL: '',
        });
        const nc = await connect({ servers: url });
        try {
          const jsm = await jetstreamManager(nc);
          for (const durable of [names.durableRequests, names.durableResults])
            expect((await jsm.consumers.info(names.stream, durable)).num_ack_pending).toBe(0);
        } finally {
          await nc.close();
        }
      } finally {
        const nc = await connect({ servers: url });
        await (await jetstreamManager(nc)).streams.delete(names.stream).catch(() => undefined);
        await nc.close();
      }
    },
    150_000,
  );
});
