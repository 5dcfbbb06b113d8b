import amqp, { type Channel, type ChannelModel, type Options } from 'amqplib';

// RabbitMQ plumbing shared by the outbox sink, the fulfillment consumer and the stock transport:
// an AMQP_URL naming several nodes of a cluster, a connection that moves to the next node when
// its node goes away, and queue declarations that are classic (the default) or quorum (opt-in).

// Limits, each with its reason.
/** A node that does not answer (a dropped SYN, a frozen VM) is given up for the next after this. */
const CONNECT_TIMEOUT_MS = 5_000;
/**
 * Redeliveries of one message before a quorum queue dead-letters it: far above any transient
 * fault (each failed delivery is requeued after a pause of 0.5–1 s, so this is many minutes), low
 * enough that a message that can never be applied stops circling and is parked for an operator.
 */
export const QUORUM_DELIVERY_LIMIT = 1_000;

export interface AmqpHost {
  host: string;
  port: number;
}

export interface AmqpHostList {
  /** One single-host URL per node, in the order given, each with the credentials, vhost and query. */
  urls: string[];
  hosts: AmqpHost[];
}

const DEFAULT_PORTS: Record<string, number> = { 'amqp:': 5672, 'amqps:': 5671 };

function parseHost(text: string): AmqpHost & { text: string } {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]/]+)(?::(\d*))?$/.exec(text);
  if (!match) throw new Error(`AMQP_URL: cannot read host "${text}" (IPv6 addresses go in brackets)`);
  const host = match[1]!;
  const portText = match[2];
  const port = portText === undefined || portText === '' ? 0 : Number(portText);
  if (portText !== undefined && portText !== '' && !(Number.isInteger(port) && port >= 1 && port <= 65535))
    throw new Error(`AMQP_URL: port "${portText}" of ${host} is not a TCP port`);
  return { host, port, text: portText ? `${host}:${port}` : host };
}

/**
 * `amqp://u:p@h1:5672,h2:5673/vhost?heartbeat=10` → one URL per host, each carrying the user,
 * password, vhost and query of the whole (amqplib connects to one host per URL). A single host is
 * returned as given. Ports default to 5672 (amqps: 5671).
 */
export function parseAmqpHosts(url: string): AmqpHostList {
  const match = /^(amqps?:)\/\/(?:([^@/]*)@)?([^/?#]*)(.*)$/.exec(url.trim());
  if (!match) throw new Error('AMQP_URL must start with amqp:// or amqps://');
  const scheme = match[1]!;
  const credentials = match[2];
  const hostList = match[3] ?? '';
  const rest = match[4] ?? '';
  const items = hostList.split(',').map((h) => h.trim());
  if (items.some((h) => h === '')) throw new Error('AMQP_URL: an empty host in the host list');
  const hosts = items.map(parseHost);
  const auth = credentials === undefined ? '' : `${credentials}@`;
  return {
    urls: hosts.map((h) => `${scheme}//${auth}${h.text}${rest}`),
    hosts: hosts.map((h) => ({ host: h.host, port: h.port || (DEFAULT_PORTS[scheme] ?? 5672) })),
  };
}

export interface AmqpConnector {
  /**
   * Connects to the node after the one whose connection was lost last (the first node at first),
   * trying each node once in turn; the last error when none answers.
   */
  connect(): Promise<ChannelModel>;
  /** The single-host URL of the node the last connection went to (logs, tests). */
  readonly current: string | undefined;
}

/**
 * One connector per client of the broker. A connection that closes, for whatever reason, moves
 * the next attempt to the following node: after a node is killed the client does not wait out a
 * connect timeout against it first. A node that refuses is skipped at once (ECONNREFUSED).
 */
export function amqpConnector(url: string, socketOptions: Record<string, unknown> = {}): AmqpConnector {
  const { urls } = parseAmqpHosts(url);
  let next = 0;
  let current: string | undefined;
  return {
    get current() {
      return current;
    },
    async connect() {
      let lastError: unknown;
      for (let tried = 0; tried < urls.length; tried++) {
        const index = (next + tried) % urls.length;
        const target = urls[index]!;
        try {
          const connection = await amqp.connect(target, { timeout: CONNECT_TIMEOUT_MS, ...socketOptions });
          next = index;
          current = target;
          connection.once('close', () => {
            if (next === index) next = (index + 1) % urls.length;
          });
          return connection;
        } catch (error) {
          lastError = error;
        }
      }
      throw lastError instanceof Error ? lastError : new Error(String(lastError));
    },
  };
}

/** FLASHPAY_AMQP_QUORUM=1: queues declared as quorum queues (replicated on the cluster's nodes). */
export function amqpQuorumFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  const raw = env.FLASHPAY_AMQP_QUORUM;
  if (raw === undefined || raw === '' || raw === '0') return false;
  if (raw === '1') return true;
  throw new Error(`FLASHPAY_AMQP_QUORUM must be 0 or 1, got "${raw}"`);
}

export interface QueueDeclaration {
  /** Quorum queue (replicated, leader elected) rather than classic (on one node). */
  quorum: boolean;
  /** Where a rejected (or, on a quorum queue, too often redelivered) message goes; '' = default exchange. */
  deadLetter?: { exchange: string; routingKey: string };
}

/**
 * The arguments of a durable queue. Classic stays exactly what it always was (so that existing
 * queues redeclare without a 406 PRECONDITION_FAILED). Quorum adds the type and the delivery limit
 * after which the broker itself dead-letters a message. Switching an existing queue's kind is not
 * possible in place: RabbitMQ refuses a redeclaration with other arguments (406), so the switch is
 * opt-in and needs new (or deleted and drained) queues (docs/deploy.md).
 */
export function queueOptions(declaration: QueueDeclaration): Options.AssertQueue {
  const args: Record<string, unknown> = {};
  if (declaration.deadLetter) {
    args['x-dead-letter-exchange'] = declaration.deadLetter.exchange;
    args['x-dead-letter-routing-key'] = declaration.deadLetter.routingKey;
  }
  if (declaration.quorum) {
    args['x-queue-type'] = 'quorum';
    args['x-delivery-limit'] = QUORUM_DELIVERY_LIMIT;
  }
  return Object.keys(args).length === 0 ? { durable: true } : { durable: true, arguments: args };
}

/** Declares a durable queue as `queueOptions` describes it. */
export async function declareQueue(channel: Channel, name: string, declaration: QueueDeclaration): Promise<void> {
  await channel.assertQueue(name, queueOptions(declaration));
}
