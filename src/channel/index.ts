import { createHash, timingSafeEqual } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../platform/errors.ts';
import { buildHttp, routesOf, type RouteEntry } from '../platform/http.ts';
import { contractCheckEnabled, installContractCheck } from '../platform/contract.ts';
import { channelSwaggerOptions } from './channel.openapi.ts';
import { registerControlRoutes } from './channel.control.ts';
import { registerLedgerRoutes, type ChannelDeps } from './channel.routes.ts';
import { FaultBook, RequestCounter } from './faults.ts';
import { registerAccountControlRoutes } from './accounts.ts';
import { FulfilmentBook } from './fulfilments.ts';
import { registerFulfilmentRoutes } from './fulfilments.routes.ts';
import type { LedgerStore } from './ledger.ts';
import { createMemoryLedger } from './ledger.memory.ts';
import { Notifier, unboundedController } from './notifier.ts';
import type { Dialect } from './dialect.ts';
import { RequestLog } from './wire.ts';
import { statementBody } from './ledger.ts';

export { createMemoryLedger } from './ledger.memory.ts';
export { createPgLedger } from './ledger.pg.ts';
export type { LedgerStore, StatementLine, ChargeStatus, NotifyKind } from './ledger.ts';
export { FAULT_KINDS, FAULT_OPS, type FaultKind, type FaultOp } from './faults.ts';
export { drawBetween, mulberry32 } from './prng.ts';
export type { Dialect } from './dialect.ts';
export { developmentDouble, type DevelopmentDouble, type DoubleName } from './dialects/development.ts';

export interface ChannelOptions {
  store?: LedgerStore;
  notifySecret: string;
  control?: boolean;
  /** When set, every `/_control` request needs `Authorization: Bearer <controlToken>`. */
  controlToken?: string;
  /** Hosts `notify_url` may name; loopback by default. */
  notifyHosts?: readonly string[];
  notifyRetryBaseMs?: number;
  notifyMaxAttempts?: number;
  log?: (msg: string) => void;
  /**
   * A provider double (issue 37): this ledger behind that provider's wire format instead of the
   * fake channel's, with the same `/_control` API (plus `/_control/statement`, the ledger in the
   * fake channel's words, and each request received in `/_control/requests`).
   */
  dialect?: Dialect;
  /** Requests to a double may be larger than the fake channel's (a provider's form bodies). */
  bodyLimitBytes?: number;
}

export interface RunningChannel {
  url: string;
  port: number;
  /** Every route the channel's router holds (tests walk them; `routesOf`). */
  routes: readonly RouteEntry[];
  close(): Promise<void>;
}

// Defaults: a first retry after a second, doubling, eight attempts: about four minutes of
// trying before a notification is given up, long enough to ride out a receiver restart.
const DEFAULT_RETRY_BASE_MS = 1_000;
const DEFAULT_MAX_ATTEMPTS = 8;
/** Requests to the channel are small JSON documents. */
const BODY_LIMIT_BYTES = 16 * 1024;

const LOOPBACK_HOSTS = ['127.0.0.1', 'localhost', '::1'];

/**
 * The control API scripts the ledger (one call marks an order paid): it has a token of its own.
 * The hook is installed on the control routes' own scope (see startChannel), so it runs for exactly
 * the requests the router matched to one of them — never decided from the raw URL, which the
 * router reads differently (`/%5Fcontrol/…` and `http://host/_control/…` both reach `/_control/…`;
 * issue 40, docs/security.md "One path, one decision").
 */
function requireControlToken(token: string) {
  const expected = createHash('sha256').update(token).digest();
  return async (request: FastifyRequest): Promise<void> => {
    const match = /^Bearer +(\S+)$/i.exec(request.headers.authorization ?? '');
    // Compared as digests: equal length, constant time, whatever was sent.
    const given = createHash('sha256')
      .update(match?.[1] ?? '')
      .digest();
    if (!match || !timingSafeEqual(expected, given))
      throw new AppError(
        'UNAUTHENTICATED',
        'the control API needs Authorization: Bearer <FLASHPAY_CONTROL_TOKEN>',
        {},
        { 'WWW-Authenticate': 'Bearer' },
      );
  };
}

/** Starts the fake payment channel on host:port (port 0 picks a free one). */
export async function startChannel(
  options: ChannelOptions & { host?: string; port?: number },
): Promise<RunningChannel> {
  const host = options.host ?? '127.0.0.1';
  const log = options.log ?? (() => undefined);
  const shutdown = unboundedController();
  const notifier = new Notifier(
    options.notifySecret,
    {
      retryBaseMs: options.notifyRetryBaseMs ?? DEFAULT_RETRY_BASE_MS,
      maxAttempts: options.notifyMaxAttempts ?? DEFAULT_MAX_ATTEMPTS,
    },
    log,
    options.dialect ? (n) => options.dialect!.notification(n) : undefined,
  );
  const store = options.store ?? createMemoryLedger();
  const deps: ChannelDeps = {
    store,
    faults: new FaultBook(),
    requests: new RequestCounter(),
    notifier,
    pause: (ms) => delay(ms, undefined, { signal: shutdown.signal }),
    notifyHosts: options.notifyHosts ?? LOOPBACK_HOSTS,
    fulfilments: store.fulfilments ?? new FulfilmentBook(),
  };
  const { dialect } = options;
  // Closed last in `flashpay start` (after the API drained); its held faults are cut, as before.
  const app = buildHttp({
    bodyLimitBytes: options.bodyLimitBytes ?? BODY_LIMIT_BYTES,
    logLevel: 'silent',
    closeConnections: 'all',
  });
  if (dialect) {
    // The provider's API is the provider's document, not ours: no swagger, no contract check.
    const received = new RequestLog();
    deps.received = received;
    app.addHook('onRequest', async (request) => {
      if (!request.url.startsWith('/_control')) received.record(request.method, request.url, request.headers);
    });
    dialect.register(app, deps);
  } else {
    await app.register(swagger, channelSwaggerOptions);
    await app.register(swaggerUi, { routePrefix: '/docs' });
    if (contractCheckEnabled()) installContractCheck(app, () => app.swagger() as never);
    registerLedgerRoutes(app, deps);
  }
  registerFulfilmentRoutes(app, deps, deps.fulfilments ?? new FulfilmentBook());
  if (options.control) {
    const { controlToken } = options;
    // An encapsulated scope: its onRequest hook belongs to the routes registered inside it and to
    // nothing else, so access follows the route matched, whatever spelling of the path matched it.
    await app.register(async (control) => {
      if (controlToken !== undefined) control.addHook('onRequest', requireControlToken(controlToken));
      registerControlRoutes(control, deps, dialect);
      registerAccountControlRoutes(control, store.accounts);
      // The ledger in the fake channel's words, for tests of a double: its own statement is the provider's.
      if (dialect) control.get('/_control/statement', async () => statementBody(await store.statement(), undefined));
    });
  }
  await app.listen({ host, port: options.port ?? 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  let closing: Promise<void> | undefined;
  return {
    url: `http://${urlHost}:${port}`,
    port,
    routes: routesOf(app),
    close() {
      closing ??= (async () => {
        // Faulted requests still being held are cut short, then sockets, then deliveries.
        shutdown.abort();
        await app.close();
        await notifier.stop();
      })();
      return closing;
    },
  };
}
