import { isIP } from 'node:net';
import path from 'node:path';
import { pgbouncerFromEnv } from './pgbouncer.ts';
import { providerConfigFromEnv, type ProviderConfig } from './provider.config.ts';

/** Every tunable, with its default and the reason for the default. */
export interface Config {
  databaseUrl: string | undefined;
  /** FLASHPAY_PGBOUNCER=1: DATABASE_URL is a PgBouncer in transaction mode (platform/pgbouncer.ts). */
  pgbouncer: boolean;
  /**
   * FLASHPAY_DIRECT_DATABASE_URL: the same database without the pooler, for what needs a session:
   * migrations (their advisory lock) and the outbox's LISTEN. Defaults to DATABASE_URL.
   */
  directDatabaseUrl: string | undefined;
  dataDir: string;
  host: string;
  port: number;
  channelPort: number;
  channelUrl: string | undefined;
  /** FLASHPAY_PROVIDER and its credentials (provider.config.ts, issue 37). */
  providers: ProviderConfig;
  poolSize: number;
  dbConnectTimeoutMs: number;
  shutdownGraceMs: number;
  /**
   * FLASHPAY_PAY_TIMEOUT_MS: when set, every provider's call timeout; unset, each provider has its
   * own (DEFAULT_PAY_TIMEOUT_MS in provider.config.ts). Read it through `payTimeoutOf`.
   */
  payTimeoutMs: number | undefined;
  staleAfterMs: number;
  recoveryIntervalMs: number;
  expiryIntervalMs: number;
  relayIntervalMs: number;
  reconcileIntervalMs: number;
  idempotencyWaitMs: number;
  idempotencyRetentionMs: number;
  notifyToleranceSeconds: number;
  bodyLimitBytes: number;
  jwtSecret: string | undefined;
  /** Checked (and stamped by `flashpay token`) when set: `iss` and `aud` of bearer tokens. */
  jwtIssuer: string | undefined;
  jwtAudience: string | undefined;
  notifySecret: string | undefined;
  /** Signs the outbox's deliveries to the fulfilment webhook; never the provider's secret. */
  eventsSecret: string | undefined;
  outboxSink: 'http' | 'nats' | 'amqp';
  natsUrl: string | undefined;
  /** `num_replicas` of every JetStream stream flashpay creates (3 on a three-node cluster: one may die). */
  natsReplicas: number;
  amqpUrl: string | undefined;
  logLevel: string;
  /** NODE_ENV=production or `start --production`: no development secrets, no built-in provider double. */
  production: boolean;
  /** Where the built-in provider double listens: loopback unless told otherwise. */
  channelHost: string;
  /** Hosts the double may send notifications to (its `notify_url`); loopback by default. */
  channelNotifyHosts: string[];
  /** Guards the double's `/_control` API when set (required for `--control` in production). */
  controlToken: string | undefined;
  /** Requests per minute per principal per route (0: off); in memory, per process. */
  rateLimitPerMinute: number;
  /** Peers whose X-Forwarded-For is believed (IPs and CIDRs); empty: the socket's address is the client's. */
  trustedProxies: string[];
  /** 401 answers per minute per client address before it gets 429 (0: no limit); in memory, per process. */
  failedAuthPerMinute: number;
  /** A bearer token Prometheus may scrape `/metrics` with (an operator token also works). */
  metricsToken: string | undefined;
  /** Seed 002: the fulfilment provider (default: the channel, which has the fake one). */
  fulfilmentUrl: string | undefined;
  compensationDeadlineMs: number;
  /** `async`: every create answers 202 PENDING, as with `Prefer: respond-async` (docs/queued-orders.md). */
  orderMode: 'sync' | 'async';
  /** Group commit of concurrent one-line creates per SKU (src/orders/create/batch.ts); off: one transaction per buyer. */
  createBatch: boolean;
  /** A claim on a queued-order outbox row older than this is taken over by another process. */
  claimLeaseMs: number;
  /** A PENDING / RELEASING order with no stock answer for this long gets its request sent again. */
  stockResendAfterMs: number;
  /** Pause between passes of the stock pump (requests → stock service → results). */
  stockIntervalMs: number;
  /** The base URL the provider reaches this service at (several instances behind one address); else this process's own. */
  publicUrl: string | undefined;
  /** `external`: a `flashpay inventory` process applies the stock requests; `inside` (default): this process does. */
  stockService: 'inside' | 'external' | 'separate';
  /** `separate` with the database transport: the stock service's own database, where the shop delivers requests and reads results. */
  stockDatabaseUrl: string | undefined;
  /** What carries stock requests and results: the database (default) or RabbitMQ (AMQP_URL). */
  stockTransport: 'database' | 'amqp' | 'jetstream';
  /** RabbitMQ queue names `<prefix>.requests|results|dlq` (distinct per deployment or test run). */
  stockQueuePrefix: string;
  /** JetStream: how long a delivered, unacknowledged stock message waits before it is redelivered. */
  stockAckWaitMs: number;
}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new Error(`${name} must be an integer >= ${min}, got "${raw}"`);
  return value;
}

function optionalInt(env: NodeJS.ProcessEnv, name: string, min: number): number | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : int(env, name, 0, min);
}

export function tokenOptions(config: Pick<Config, 'jwtIssuer' | 'jwtAudience'>): {
  issuer?: string;
  audience?: string;
} {
  return {
    ...(config.jwtIssuer ? { issuer: config.jwtIssuer } : {}),
    ...(config.jwtAudience ? { audience: config.jwtAudience } : {}),
  };
}

function publicUrl(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  const url = new URL(raw); // throws on a malformed value: refuse to start rather than guess
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new Error('FLASHPAY_PUBLIC_URL must be an http(s) URL');
  return url.toString().replace(/\/+$/, '');
}

/** Where the provider sends notifications about our charges: configured, never guessed when several instances share one address. */
export function notifyUrlFor(config: Pick<Config, 'publicUrl'>, ownUrl: string): string {
  return `${config.publicUrl ?? ownUrl}/v1/payment-notifications`;
}

function stockTransport(raw: string | undefined): 'database' | 'amqp' | 'jetstream' {
  if (raw === undefined || raw === '' || raw === 'database') return 'database';
  if (raw === 'amqp' || raw === 'jetstream') return raw;
  throw new Error('FLASHPAY_STOCK_TRANSPORT must be database, amqp or jetstream');
}

// JetStream refuses a stream of more than 5 replicas; say so at start, not at the first stream update.
const MAX_NATS_REPLICAS = 5;

function natsReplicas(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 1;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > MAX_NATS_REPLICAS)
    throw new Error(`FLASHPAY_NATS_REPLICAS must be an integer from 1 to ${MAX_NATS_REPLICAS}, got "${raw}"`);
  return value;
}

/** FLASHPAY_TRUSTED_PROXIES: a comma list of IP addresses and CIDR ranges, each checked at start. */
export function trustedProxies(raw: string | undefined): string[] {
  const entries = (raw ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const entry of entries) {
    const [address = '', bits, extra] = entry.split('/');
    const family = isIP(address);
    const maxBits = family === 6 ? 128 : 32;
    const bitsOk = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= maxBits);
    if (family === 0 || extra !== undefined || !bitsOk)
      throw new Error(`FLASHPAY_TRUSTED_PROXIES takes IP addresses and CIDR ranges, comma-separated; got "${entry}"`);
  }
  return entries;
}

function orderMode(raw: string | undefined): 'sync' | 'async' {
  if (raw === undefined || raw === '' || raw === 'sync') return 'sync';
  if (raw === 'async') return 'async';
  throw new Error('FLASHPAY_ORDER_MODE must be sync or async');
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  const sink = env.FLASHPAY_OUTBOX_SINK ?? 'http';
  if (sink !== 'http' && sink !== 'nats' && sink !== 'amqp')
    throw new Error(`FLASHPAY_OUTBOX_SINK must be http, nats or amqp`);
  return {
    databaseUrl: env.DATABASE_URL || undefined,
    pgbouncer: pgbouncerFromEnv(env),
    directDatabaseUrl: env.FLASHPAY_DIRECT_DATABASE_URL || undefined,
    dataDir: path.resolve(cwd, env.FLASHPAY_DATA_DIR ?? '.flashpay'),
    host: env.FLASHPAY_HOST ?? '127.0.0.1',
    port: int(env, 'FLASHPAY_PORT', 8080),
    channelPort: int(env, 'FLASHPAY_CHANNEL_PORT', 8081),
    channelUrl: env.FLASHPAY_CHANNEL_URL || undefined,
    providers: providerConfigFromEnv(env),
    // Two cores: a handful of connections keeps PostgreSQL busy without thrashing.
    poolSize: int(env, 'FLASHPAY_POOL_SIZE', 20, 1),
    // A request waiting this long for a connection (dry pool, server not answering) gets 503.
    dbConnectTimeoutMs: int(env, 'FLASHPAY_DB_CONNECT_TIMEOUT_MS', 5_000, 100),
    // On SIGTERM, requests in flight get this long to finish (a pay is bounded by its own timeouts).
    shutdownGraceMs: int(env, 'FLASHPAY_SHUTDOWN_GRACE_MS', 10_000, 0),
    // Unset: each provider's own (the fake channel 300 ms, Stripe and Alipay 10 s; provider.config.ts).
    payTimeoutMs: optionalInt(env, 'FLASHPAY_PAY_TIMEOUT_MS', 1),
    staleAfterMs: int(env, 'FLASHPAY_STALE_AFTER_MS', 60_000),
    recoveryIntervalMs: int(env, 'FLASHPAY_RECOVERY_INTERVAL_MS', 5_000, 10),
    expiryIntervalMs: int(env, 'FLASHPAY_EXPIRY_INTERVAL_MS', 1_000, 10),
    relayIntervalMs: int(env, 'FLASHPAY_RELAY_INTERVAL_MS', 200, 10),
    // A full statement read: often enough to notice drift within minutes, rarely enough to be cheap.
    reconcileIntervalMs: int(env, 'FLASHPAY_RECONCILE_INTERVAL_MS', 60_000, 1_000),
    // How long a second request with an in-flight key waits before 409 REQUEST_IN_PROGRESS.
    idempotencyWaitMs: int(env, 'FLASHPAY_IDEMPOTENCY_WAIT_MS', 5_000, 1),
    // Longer than any client's retry window (contract: at least 24 h).
    idempotencyRetentionMs: int(env, 'FLASHPAY_IDEMPOTENCY_RETENTION_MS', 7 * 24 * 3600 * 1000, 24 * 3600 * 1000),
    notifyToleranceSeconds: int(env, 'FLASHPAY_NOTIFY_TOLERANCE_S', 300, 1),
    bodyLimitBytes: int(env, 'FLASHPAY_BODY_LIMIT_BYTES', 16 * 1024, 1024),
    jwtSecret: env.FLASHPAY_JWT_SECRET || undefined,
    jwtIssuer: env.FLASHPAY_JWT_ISSUER || undefined,
    jwtAudience: env.FLASHPAY_JWT_AUDIENCE || undefined,
    notifySecret: env.FLASHPAY_NOTIFY_SECRET || undefined,
    eventsSecret: env.FLASHPAY_EVENTS_SECRET || undefined,
    outboxSink: sink,
    natsUrl: env.NATS_URL || undefined,
    natsReplicas: natsReplicas(env.FLASHPAY_NATS_REPLICAS),
    amqpUrl: env.AMQP_URL || undefined,
    logLevel: env.FLASHPAY_LOG_LEVEL ?? 'info',
    production: env.NODE_ENV === 'production',
    channelHost: env.FLASHPAY_CHANNEL_HOST ?? '127.0.0.1',
    channelNotifyHosts: (env.FLASHPAY_CHANNEL_NOTIFY_HOSTS ?? '127.0.0.1,localhost,::1')
      .split(',')
      .map((h) => h.trim().toLowerCase())
      .filter(Boolean),
    controlToken: env.FLASHPAY_CONTROL_TOKEN || undefined,
    // Twenty a second, sustained, per buyer and route: far above a person retrying, far below a script.
    rateLimitPerMinute: int(env, 'FLASHPAY_RATE_LIMIT_PER_MINUTE', 1_200),
    trustedProxies: trustedProxies(env.FLASHPAY_TRUSTED_PROXIES),
    // A person mistyping a token a few times a minute is far below it; guessing tokens is far above.
    failedAuthPerMinute: int(env, 'FLASHPAY_FAILED_AUTH_PER_MINUTE', 60),
    metricsToken: env.FLASHPAY_METRICS_TOKEN || undefined,
    fulfilmentUrl: env.FLASHPAY_FULFILMENT_URL || undefined,
    // A day of retries with backoff before a stuck fulfilment or compensation is a person's job.
    compensationDeadlineMs: int(env, 'FLASHPAY_COMPENSATION_DEADLINE_MS', 24 * 3600 * 1000, 1),
    // A shop whose stock service has its own database cannot reserve in the create: every create is queued.
    orderMode: env.FLASHPAY_STOCK_SERVICE === 'separate' ? 'async' : orderMode(env.FLASHPAY_ORDER_MODE),
    createBatch: env.FLASHPAY_CREATE_BATCH !== '0',
    // The contract's 30 s: far above one delivery, short enough that a dead process's claims come back soon.
    claimLeaseMs: int(env, 'FLASHPAY_CLAIM_LEASE_MS', 30_000, 100),
    stockResendAfterMs: int(env, 'FLASHPAY_STOCK_RESEND_AFTER_MS', 30_000, 100),
    stockIntervalMs: int(env, 'FLASHPAY_STOCK_INTERVAL_MS', 100, 10),
    publicUrl: publicUrl(env.FLASHPAY_PUBLIC_URL),
    stockService:
      env.FLASHPAY_STOCK_SERVICE === 'external' || env.FLASHPAY_STOCK_SERVICE === 'separate'
        ? env.FLASHPAY_STOCK_SERVICE
        : 'inside',
    stockDatabaseUrl: env.FLASHPAY_STOCK_DATABASE_URL || undefined,
    stockTransport: stockTransport(env.FLASHPAY_STOCK_TRANSPORT),
    stockQueuePrefix: env.FLASHPAY_STOCK_QUEUE_PREFIX || 'flashpay.stock',
    // Far above one inbox commit; what a killed consumer's messages wait before another gets them.
    stockAckWaitMs: int(env, 'FLASHPAY_STOCK_ACK_WAIT_MS', 30_000, 1_000),
  };
}
