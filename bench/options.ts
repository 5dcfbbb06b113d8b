import { intFlag, parseCommand, stringFlag, usageError, UsageError } from '../src/platform/args.ts';
import { BENCH } from '../src/cli/index.ts';

/** What one `flashpay bench` does. Counts follow the issues; `quick` is a tenth of them for smoke runs. */
export interface BenchOptions {
  quick: boolean;
  json: boolean;
  /** Run only one part (handy while iterating); default all (the cluster part not with --quick). */
  only: 'orders' | 'outbox' | 'flash' | 'recovery' | 'p3' | 'wallet' | 'cluster' | undefined;
  orders: OrdersCounts;
  outbox: OutboxCounts;
  recovery: RecoveryCounts;
  /** JetStream for the outbox's broker runs; without it they are reported as skipped. */
  natsUrl: string | undefined;
}

export interface OrdersCounts {
  /** Requests per run (hot, sold out) and SKUs (= orders) of the uncontended run. */
  requests: number;
  /** Buyers with a request in flight at any moment. */
  concurrency: number;
  /** Untimed requests per server before the first timed run (JIT, pool, keep-alive sockets). */
  warmup: number;
  /** Distinct buyers (one JWT each), requests are spread over them round-robin. */
  users: number;
}

export interface OutboxCounts {
  events: number;
  relayCounts: number[];
  /** Rows one claim takes, for the relay and the baseline alike (the relay's production default). */
  batchSize: number;
}

/** P6: UNKNOWN orders recovered, and the provider they are recovered from. */
export interface RecoveryCounts {
  orders: number;
  /** Every n-th order never reached the provider (closed, FAILED); the others were charged (PAID). */
  unchargedEvery: number;
  /** The provider's answer time per query and close. */
  providerLatencyMs: number;
}

const FULL_ORDERS: OrdersCounts = { requests: 5_000, concurrency: 64, warmup: 500, users: 1_000 };
const FULL_OUTBOX: OutboxCounts = { events: 10_000, relayCounts: [1, 2, 4], batchSize: 50 };
// After a timeout outage most UNKNOWN pays did reach the provider; one in five never did.
const FULL_RECOVERY: RecoveryCounts = { orders: 10_000, unchargedEvery: 5, providerLatencyMs: 20 };
// Quick mode divides counts by this; concurrency and relay counts stay as they are.
const QUICK_DIVISOR = 10;

export function parseBenchOptions(argv: string[], env: NodeJS.ProcessEnv = process.env): BenchOptions {
  const args = parseCommand(BENCH, argv);
  const quick = args.flags.has('quick') || env.FLASHPAY_BENCH_QUICK === '1';
  const only = stringFlag(args, 'only');
  if (
    only !== undefined &&
    only !== 'orders' &&
    only !== 'outbox' &&
    only !== 'flash' &&
    only !== 'recovery' &&
    only !== 'p3' &&
    only !== 'wallet' &&
    only !== 'cluster'
  )
    throw usageError(BENCH, `got --only ${only}; expected --only orders|outbox|flash|recovery|p3|wallet|cluster`);
  const scale = (n: number) => (quick ? Math.max(1, Math.round(n / QUICK_DIVISOR)) : n);
  const requests = intFlag(args, 'requests', scale(FULL_ORDERS.requests));
  const events = intFlag(args, 'events', scale(FULL_OUTBOX.events));
  const concurrency = intFlag(args, 'concurrency', FULL_ORDERS.concurrency);
  if (requests < 1 || events < 1 || concurrency < 1)
    throw new UsageError('--requests, --events and --concurrency must be at least 1');
  return {
    quick,
    json: args.flags.has('json'),
    only,
    orders: { requests, concurrency, warmup: scale(FULL_ORDERS.warmup), users: Math.min(FULL_ORDERS.users, requests) },
    outbox: { ...FULL_OUTBOX, events },
    recovery: { ...FULL_RECOVERY, orders: scale(FULL_RECOVERY.orders) },
    natsUrl: env.NATS_URL || undefined,
  };
}
