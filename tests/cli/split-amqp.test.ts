import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import { describe, expect } from 'vitest';
import { brokerTest } from '../outbox/broker-gate.ts';
import { stockQueues } from '../../src/orders/queued/transports/amqp.ts';
import { runSplitSale } from './split-sale.ts';
import { everyOf } from '../support/every.ts';

describe('three processes, split databases, over RabbitMQ', () => {
  brokerTest(
    'SP-02 the split-database sale of SP-01 over RabbitMQ: the shops never reach the stock database; nothing left on the queues',
    'AMQP_URL',
    async (url) => {
      const prefix = `flashpay.stock.s${randomBytes(4).toString('hex')}`;
      const q = stockQueues(prefix);
      const connection = await amqp.connect(url);
      const channel = await connection.createChannel();
      const counts = async () =>
        Promise.all(
          [q.requests, q.results, q.dlq].map(
            async (name) => (await channel.checkQueue(name).catch(() => ({ messageCount: -1 }))).messageCount,
          ),
        );
      try {
        await runSplitSale(
          {
            FLASHPAY_STOCK_TRANSPORT: 'amqp',
            AMQP_URL: url,
            FLASHPAY_STOCK_QUEUE_PREFIX: prefix,
            FLASHPAY_STOCK_DATABASE_URL: '', // over a broker the shops need no route to the stock database
          },
          { drained: async () => everyOf(await counts(), (n) => n === 0) },
        );
        expect(await counts()).toEqual([0, 0, 0]);
      } finally {
        for (const queue of Object.values(q)) await channel.deleteQueue(queue).catch(() => undefined);
        await connection.close();
      }
    },
    150_000,
  );
});
