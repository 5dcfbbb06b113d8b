import type { CommandSpec } from '../../platform/args.ts';
import { ENV } from './env.ts';

export const SIM: CommandSpec = {
  name: 'sim',
  synopsis: '--seed N [options] | --scenario seed-002 [options]',
  summary:
    'The seeded fault-injection flash sale; exit 0 only on a clean reconciliation. Without --api it\n' +
    'starts a throwaway stack (DATABASE_URL, else an embedded PostgreSQL in a temporary folder);\n' +
    'with --api it drives a running `flashpay start --control` and judges only the orders it made.',
  flags: [
    { name: 'seed', value: 'N', description: 'the seed: the same seed plays the same sale' },
    { name: 'scenario', value: 'seed-002', description: 'seed 002’s own run instead (prints its five facts)' },
    { name: 'orders', value: 'N', description: 'buyers who order (default 24)' },
    { name: 'stock', value: 'N', description: 'units on sale (default 24)' },
    { name: 'late', value: 'N', description: 'buyers who come after the sell-out (default 12)' },
    { name: 'concurrency', value: 'N', description: 'requests in flight at once (default 8)' },
    { name: 'mix', value: 'K=N,…', description: 'faults: decline, lost, linger, nopay, expire, refuse, refundfail' },
    { name: 'refund-timeouts', value: 'N', description: 'refunds whose reply times out (default 2)' },
    { name: 'lines', value: 'N', description: 'lines per order, 1..20 (default 1)' },
    { name: 'wallet-share', value: '0..1', description: 'share of orders paid from the wallet (default 0)' },
    { name: 'async', description: 'place every order with Prefer: respond-async' },
    { name: 'api', value: 'URL', description: 'drive the stack at URL (needs --channel)' },
    { name: 'channel', value: 'URL', description: 'its channel, started with --control' },
    { name: 'tenant', value: 'T', description: 'the tenant it sells in (default acme)' },
    { name: 'json', description: 'the report (and the plan) as JSON' },
  ],
  env: [
    ENV.DATABASE_URL,
    ENV.FLASHPAY_PG_PORT,
    { name: 'FLASHPAY_JWT_SECRET', description: 'with --api: signs its tokens (else FLASHPAY_DATA_DIR/jwt.secret)' },
    { name: 'FLASHPAY_CONTROL_TOKEN', description: 'with --api: the channel’s control token' },
  ],
  examples: ['flashpay sim --seed 7 --orders 200 --stock 50 --mix decline=5,lost=10'],
};

export const BENCH: CommandSpec = {
  name: 'bench',
  synopsis: '[options]',
  summary:
    'Order creation, outbox delivery and recovery on real HTTP against a database of its own, each\n' +
    'next to a baseline measured the same way. Exit non-zero only when a correctness check failed.',
  flags: [
    { name: 'quick', description: 'a tenth of the counts, for smoke runs (also FLASHPAY_BENCH_QUICK=1)' },
    { name: 'json', description: 'one JSON document on stdout' },
    { name: 'only', value: 'PART', description: 'one part: orders, outbox, flash, recovery, p3, wallet or cluster' },
    { name: 'requests', value: 'N', description: 'requests per orders run (default 5000)' },
    { name: 'events', value: 'N', description: 'events per outbox run (default 10000)' },
    { name: 'concurrency', value: 'N', description: 'requests in flight (default 64)' },
  ],
  env: [
    { name: 'FLASHPAY_BENCH_QUICK', description: '1: as --quick' },
    { name: 'NATS_URL', description: 'JetStream for the broker runs (skipped without it)' },
  ],
  examples: ['flashpay bench --quick --only orders'],
};

export const LISTEN: CommandSpec = {
  name: 'listen',
  synopsis: '[options]',
  summary:
    'Follows the events the relay delivers, one line each, from now on; with --forward-to, POSTs\n' +
    'each to URL signed as the webhook sink signs (Flashpay-Signature). It reads the stack’s\n' +
    'database: the running `flashpay start` of this directory, or DATABASE_URL; with no stack in\n' +
    'reach it exits 2 (it never starts a database of its own). A forward that fails is printed\n' +
    'with its event id; `--resend ID` sends it again. Runs until Ctrl-C.',
  flags: [
    { name: 'forward-to', value: 'URL', description: 'POST each event to URL, signed' },
    { name: 'events', value: 'A,B', description: 'only these types (ORDER_PAID, ORDER_REFUNDED, …)' },
    { name: 'json', description: 'JSON lines' },
    { name: 'api', value: 'URL', description: 'the stack to follow; needs DATABASE_URL unless it is this directory’s' },
    { name: 'resend', value: 'EVENT_ID', description: 'forward that one event again to --forward-to, then exit' },
  ],
  env: [
    {
      name: 'FLASHPAY_EVENTS_SECRET',
      description: 'signs forwards (development default: FLASHPAY_DATA_DIR/events.secret)',
    },
    ENV.DATABASE_URL,
    ENV.FLASHPAY_DATA_DIR,
  ],
  examples: [
    'flashpay listen --forward-to http://127.0.0.1:3000/hooks/flashpay --events ORDER_PAID',
    'flashpay listen --resend 17 --forward-to http://127.0.0.1:3000/hooks/flashpay',
  ],
};

// What each trigger does and what can follow: its help and its message say the same.
export const TRIGGERS = {
  charged: 'the provider charges the order now; its notification settles it (PAID; a cancelled order is refunded)',
  declined: 'the order’s next charge is declined: its pay ends FAILED and its units are released',
  refunded:
    'the provider refunds the order’s charge on its own (a dashboard refund); its notification makes the order REFUNDED, with no refund of ours',
  'duplicate-callback':
    'the order’s last notification is delivered again, same notify_id: answered from its record (DUPLICATE)',
  'late-callback':
    'a late copy of the order’s charge notification under a new notify_id: recorded, nothing changes twice',
  'lost-reply':
    'the order’s next charge succeeds but its reply comes after the pay timeout. Without --order its notification is held at the channel too: the pay answers UNKNOWN and recovery’s query makes it PAID (after FLASHPAY_STALE_AFTER_MS), charged once. With --order only the reply is late: the notification, sent at once, usually settles the order PAID first',
} as const;
export type Trigger = keyof typeof TRIGGERS;

/** Words in lines of at most `width` characters. */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  for (const word of text.split(' ')) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 1 + word.length <= width) lines[lines.length - 1] = `${last} ${word}`;
    else lines.push(word);
  }
  return lines;
}

export const TRIGGER: CommandSpec = {
  name: 'trigger',
  synopsis: `${Object.keys(TRIGGERS).join('|')} [options]`,
  summary:
    'Makes one provider-side thing happen through the fake channel’s control API (`flashpay start\n' +
    '--control`). Without --order it makes an order of its own to act on (SKU trigger-<kind>-…,\n' +
    'buyer trigger-buyer), takes it as far as the kind needs (charged first for refunded and the\n' +
    'callbacks; paid for declined and lost-reply) and prints its id and its status.',
  positional: { min: 1, max: 1 },
  flags: [
    { name: 'order', value: 'ID', description: 'act on this order instead (it is not paid for you)' },
    { name: 'tenant', value: 'T', description: 'the order’s tenant (default acme)' },
    { name: 'api', value: 'URL', description: 'the stack’s API (default: the running stack’s)' },
    {
      name: 'channel',
      value: 'URL',
      description: 'its channel (default FLASHPAY_CHANNEL_URL, else the running stack’s)',
    },
    { name: 'json', description: 'one JSON line' },
  ],
  notes: `kinds:\n${Object.entries(TRIGGERS)
    .map(([kind, text]) => `  ${kind.padEnd(20)}${wrap(text, 78).join(`\n${' '.repeat(22)}`)}`)
    .join('\n')}`,
  env: [
    ENV.FLASHPAY_CONTROL_TOKEN,
    {
      name: 'FLASHPAY_JWT_SECRET',
      description: 'signs its admin and buyer tokens (else FLASHPAY_DATA_DIR/jwt.secret)',
    },
    ENV.FLASHPAY_CHANNEL_URL,
    ENV.FLASHPAY_DATA_DIR,
  ],
  examples: ['flashpay trigger lost-reply', 'flashpay trigger declined --order ord_… --tenant acme'],
};
