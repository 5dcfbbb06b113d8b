import { randomBytes } from 'node:crypto';
import amqp from 'amqplib';
import { describe, expect } from 'vitest';
import { brokerTest } from '../outbox/broker-gate.ts';
import { stockQueues } from '../../src/stock.amqp.ts';
import { runSplitSale } from './split-sale.ts';

describe('three processes, split databases, over RabbitMQ', () => {
  brokerTest(
    'SP-02 the split-database sale of SP-01 over RabbitMQ: the shops never reach the stock database; nothing left on the queues',
    'AMQP_URL',
    async (url) => {
      const prefix = `flashpay.stock.s${randomBytes(4).toString('hex')}`;
      try {
        await runSplitSale({
          FLASHPAY_STOCK_TRANSPORT: 'amqp',
          AMQP_URL: url,
          FLASHPAY_STOCK_QUEUE_PREFIX: prefix,
          FLASHPAY_STOCK_DATABASE_URL: '', // over a broker the shops need no route to the stock database
        });
      } finally {
        const connection = await amqp.connect(url);
        const channel = await connection.createChannel();
        const q = stockQueues(prefix);
        expect([
          (await channel.checkQueue(q.requests)).messageCount,
          (await channel.checkQueue(q.results)).messageCount,
          (await channel.checkQueue(q.dlq)).messageCount,
        ]).toEqual([0, 0, 0]);
        for (const queue of Object.values(q)) await channel.deleteQueue(queue).catch(() => undefined);
        await connection.close();
      }
    },
    150_000,
  );
});
