import net from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import {
  amqpConnector,
  amqpQuorumFromEnv,
  parseAmqpHosts,
  QUORUM_DELIVERY_LIMIT,
  queueOptions,
} from '../../src/platform/amqp.ts';

// AMQP_URL naming the nodes of a RabbitMQ cluster (issue 39): one single-host URL per node, each
// with the credentials, vhost and query of the whole, and a connector that moves to the next node.
describe('AMQP_URL with several hosts', () => {
  it('AH-01 splits the host list and keeps credentials, vhost and query on every host', () => {
    const list = parseAmqpHosts('amqp://u:p%40ss@h1:5672,h2:5673/shop?heartbeat=10');
    expect(list.urls).toEqual([
      'amqp://u:p%40ss@h1:5672/shop?heartbeat=10',
      'amqp://u:p%40ss@h2:5673/shop?heartbeat=10',
    ]);
    expect(list.hosts).toEqual([
      { host: 'h1', port: 5672 },
      { host: 'h2', port: 5673 },
    ]);
  });

  it('AH-02 a single host is returned as given; ports default per scheme; IPv6 in brackets', () => {
    expect(parseAmqpHosts('amqp://guest:guest@127.0.0.1:5672').urls).toEqual(['amqp://guest:guest@127.0.0.1:5672']);
    expect(parseAmqpHosts('amqp://a,b:1/').hosts).toEqual([
      { host: 'a', port: 5672 },
      { host: 'b', port: 1 },
    ]);
    expect(parseAmqpHosts('amqps://u@a, b').hosts).toEqual([
      { host: 'a', port: 5671 },
      { host: 'b', port: 5671 },
    ]);
    expect(parseAmqpHosts('amqp://[::1]:5673,[fe80::2]/v').urls).toEqual(['amqp://[::1]:5673/v', 'amqp://[fe80::2]/v']);
  });

  it('AH-03 refuses what it cannot read, naming the part', () => {
    expect(() => parseAmqpHosts('http://h1')).toThrow(/amqp:\/\//);
    expect(() => parseAmqpHosts('amqp://h1,,h2/')).toThrow(/empty host/);
    expect(() => parseAmqpHosts('amqp://h1:99999/')).toThrow(/not a TCP port/);
    expect(() => parseAmqpHosts('amqp://::1/')).toThrow(/brackets/);
  });

  it('AH-04 quorum is opt-in; quorum queues carry the type and the delivery limit, classic stays bare', () => {
    expect(amqpQuorumFromEnv({})).toBe(false);
    expect(amqpQuorumFromEnv({ FLASHPAY_AMQP_QUORUM: '1' })).toBe(true);
    expect(() => amqpQuorumFromEnv({ FLASHPAY_AMQP_QUORUM: 'yes' })).toThrow(/0 or 1/);
    expect(queueOptions({ quorum: false })).toEqual({ durable: true });
    expect(queueOptions({ quorum: true, deadLetter: { exchange: '', routingKey: 'q.dlq' } })).toEqual({
      durable: true,
      arguments: {
        'x-queue-type': 'quorum',
        'x-delivery-limit': QUORUM_DELIVERY_LIMIT,
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': 'q.dlq',
      },
    });
  });
});

describe('the connector moves on to the next node', () => {
  const closers: (() => void)[] = [];
  afterAll(() => closers.forEach((close) => close()));

  /** A port nobody listens on: connecting to it is refused at once. */
  async function deadPort(): Promise<number> {
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as net.AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return port;
  }

  it('AH-05 a refused first node is skipped for the broker behind the second; all refused: the last error', async () => {
    const broker = process.env.AMQP_URL;
    const dead = await deadPort();
    const refused = amqpConnector(`amqp://guest:guest@127.0.0.1:${dead},127.0.0.1:${await deadPort()}`);
    await expect(refused.connect()).rejects.toThrow(/ECONNREFUSED/);
    // The second half needs a broker (AMQP_URL), as tests/outbox/brokers.test.ts; under
    // FLASHPAY_REQUIRE_BROKERS=1 (.ci/run) its absence fails instead of passing on the first half.
    if (!broker && process.env.FLASHPAY_REQUIRE_BROKERS === '1')
      throw new Error('FLASHPAY_REQUIRE_BROKERS=1 but AMQP_URL is not set');
    if (!broker) return;
    const { hosts } = parseAmqpHosts(broker);
    const live = `${hosts[0]!.host}:${hosts[0]!.port}`;
    const connector = amqpConnector(broker.replace(/@[^/]*/, `@127.0.0.1:${dead},${live}`));
    const connection = await connector.connect();
    closers.push(() => void connection.close().catch(() => undefined));
    expect(connector.current).toContain(live);
    // The connection closes: the next attempt starts after the node it was on (wrapping to the dead one, then on).
    await connection.close();
    const again = await connector.connect();
    closers.push(() => void again.close().catch(() => undefined));
    expect(connector.current).toContain(live);
  });
});
