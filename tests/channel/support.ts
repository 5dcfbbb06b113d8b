import { afterAll, beforeAll, beforeEach } from 'vitest';
import { EventEmitter, once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createMemoryLedger,
  createPgLedger,
  startChannel,
  type ChannelOptions,
  type LedgerStore,
  type RunningChannel,
} from '../../src/channel/index.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

export const SECRET = 'test-notify-secret';

export interface Answer {
  status: number;
  type: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- tests read whatever the API answered
}

/** A tiny JSON client for one channel. */
export function client(baseUrl: string) {
  async function call(method: string, path: string, body?: unknown, init: RequestInit = {}): Promise<Answer> {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      ...init,
    });
    const text = await response.text();
    return {
      status: response.status,
      type: response.headers.get('content-type') ?? '',
      body: text ? JSON.parse(text) : undefined,
    };
  }
  return {
    call,
    post: (path: string, body?: unknown, init?: RequestInit) => call('POST', path, body, init),
    get: (path: string, init?: RequestInit) => call('GET', path, undefined, init),
    charge: (merchantOrder: string, amount: number, notifyUrl = 'http://127.0.0.1:9/unused') =>
      call('POST', '/charge', { merchant_order: merchantOrder, amount, notify_url: notifyUrl }),
    close: (merchantOrder: string) => call('POST', '/close', { merchant_order: merchantOrder }),
    refund: (merchantOrder: string, refundKey: string, amount: number) =>
      call('POST', '/refund', { merchant_order: merchantOrder, refund_key: refundKey, amount }),
    query: (merchantOrder: string) => call('GET', `/charges/${encodeURIComponent(merchantOrder)}`),
    statement: async () =>
      (await call('GET', '/statement')).body as {
        lines: { type: string; merchant_order: string; amount: number; ref: string; at: string }[];
        net: number;
      },
    fault: (rule: Record<string, unknown>) => call('POST', '/_control/faults', rule),
    reset: () => call('POST', '/_control/reset'),
  };
}

export type Client = ReturnType<typeof client>;

export { waitUntil as waitFor } from '../support/poll.ts';

export interface Arrival {
  rawBody: string;
  body: { notify_id: string; merchant_order: string; kind: string; amount: number; txn: string };
  signature: string | undefined;
}

/** A notification receiver: records every arrival, answers with the status `respond` picks. */
export interface Receiver {
  url: string;
  arrivals: Arrival[];
  /** Resolves once `count` notifications have arrived in total. */
  waitForArrivals(count: number): Promise<Arrival[]>;
  close(): Promise<void>;
}

export async function startReceiver(
  respond: (arrivalIndex: number, arrival: Arrival) => number = () => 200,
): Promise<Receiver> {
  const arrivals: Arrival[] = [];
  const events = new EventEmitter();
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const arrival: Arrival = {
        rawBody,
        body: JSON.parse(rawBody) as Arrival['body'],
        signature: request.headers['flashpay-signature'] as string | undefined,
      };
      const index = arrivals.push(arrival) - 1;
      response.writeHead(respond(index, arrival), { 'content-type': 'application/json' }).end('{}');
      events.emit('arrival');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/payment-notifications`,
    arrivals,
    async waitForArrivals(count) {
      while (arrivals.length < count) await once(events, 'arrival', { signal: AbortSignal.timeout(5_000) });
      return arrivals.slice();
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export interface StoreKind {
  name: 'memory' | 'postgres';
  open(): Promise<LedgerStore>;
  dispose(): Promise<void>;
}

/** Both ledger stores, so each rule is proven against the in-memory and the PostgreSQL one. */
export function storeKinds(): StoreKind[] {
  let db: TestDatabase | undefined;
  return [
    { name: 'memory', open: async () => createMemoryLedger(), dispose: async () => undefined },
    {
      name: 'postgres',
      async open() {
        db = await freshDatabase({ migrated: false });
        return createPgLedger(db.pool);
      },
      dispose: async () => db?.drop(),
    },
  ];
}

export async function startTestChannel(options: Partial<ChannelOptions> = {}): Promise<RunningChannel> {
  return startChannel({ notifySecret: SECRET, control: true, notifyRetryBaseMs: 20, notifyMaxAttempts: 4, ...options });
}

/** What useChannelOn sets up; filled in by its beforeAll. */
export interface ChannelContext {
  channel: RunningChannel;
  api: Client;
}

/** A channel on one store kind for a whole describe block, its ledger reset before each test. */
export function useChannelOn(kind: StoreKind): ChannelContext {
  const ctx = {} as ChannelContext;
  beforeAll(async () => {
    ctx.channel = await startTestChannel({ store: await kind.open() });
    ctx.api = client(ctx.channel.url);
  });
  afterAll(async () => {
    await ctx.channel?.close();
    await kind.dispose();
  });
  beforeEach(async () => {
    await ctx.api.reset();
  });
  return ctx;
}
