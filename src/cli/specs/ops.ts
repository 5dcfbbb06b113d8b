import type { CommandSpec } from '../../platform/args.ts';
import { ENV } from './env.ts';

// The stack an operator command acts on, said once for each of them.
const STACK_ENV = [ENV.DATABASE_URL, ENV.FLASHPAY_CHANNEL_URL, ENV.FLASHPAY_DATA_DIR, ENV.FLASHPAY_PG_PORT];

export const TOKEN: CommandSpec = {
  name: 'token',
  synopsis: '--tenant T --user U [options]',
  summary:
    'Prints a bearer token signed with the stack’s secret; with --console, a sign-in link to the\n' +
    'operations console instead (the token in the URL’s fragment, never sent to a server).',
  flags: [
    { name: 'tenant', value: 'T', description: 'the tenant (required)' },
    { name: 'user', value: 'U', description: 'the user, the token’s sub (required)' },
    { name: 'admin', description: 'an admin token of the tenant' },
    { name: 'operator', description: 'an operator token: every tenant' },
    { name: 'ttl', value: 'SECONDS', description: 'lifetime (default 3600; 900 with --console; at most 7 days)' },
    { name: 'console', description: 'print the console link (admin unless --operator)' },
    {
      name: 'url',
      value: 'URL',
      description: 'the console’s address (default FLASHPAY_PUBLIC_URL, else the running stack’s)',
    },
  ],
  env: [
    ENV.FLASHPAY_JWT_SECRET,
    { name: 'FLASHPAY_JWT_ISSUER', description: 'the token’s iss (and FLASHPAY_JWT_AUDIENCE, its aud)' },
    { name: 'FLASHPAY_PUBLIC_URL', description: 'the console link’s address, when set' },
    ENV.FLASHPAY_DATA_DIR,
  ],
  examples: ['flashpay token --tenant acme --user alice', 'flashpay token --tenant acme --user ops --console'],
};

export const MIGRATE: CommandSpec = {
  name: 'migrate',
  synopsis: '',
  summary: 'Applies the pending migrations and exits (`start` migrates on boot too).',
  flags: [],
  env: [
    ENV.DATABASE_URL,
    { name: 'FLASHPAY_DIRECT_DATABASE_URL', description: 'past PgBouncer: where the migration lock is taken' },
    ENV.FLASHPAY_DATA_DIR,
    ENV.FLASHPAY_PG_PORT,
  ],
  examples: ['DATABASE_URL=postgres://flashpay@db/flashpay flashpay migrate'],
};

export const RECONCILE: CommandSpec = {
  name: 'reconcile',
  synopsis: '[options]',
  summary:
    'Compares every order with the provider’s statement; exit 0 when nothing mismatches and\n' +
    'nothing is pending, 1 otherwise (docs/reconciliation.md).',
  flags: [
    { name: 'json', description: 'the whole report as JSON' },
    { name: 'full', description: 'every order and the whole statement (the default)' },
    { name: 'incremental', description: 'the scheduler’s pass: from the stored cursor of what changed' },
    { name: 'stock-database-url', value: 'URL', description: 'also compare the shop’s holds with the stock service’s' },
  ],
  env: [...STACK_ENV, ENV.FLASHPAY_STOCK_DATABASE_URL],
  examples: ['flashpay reconcile --json'],
};

export const RECOVER: CommandSpec = {
  name: 'recover',
  synopsis: '[options]',
  summary:
    'One recovery pass (stale PAYING/UNKNOWN orders asked at the provider), then the outbox, then reconciliation.',
  flags: [
    {
      name: 'stale-after-ms',
      value: 'N',
      description: 'orders untouched this long are recovered (default FLASHPAY_STALE_AFTER_MS)',
    },
    { name: 'json', description: 'the report as JSON' },
  ],
  env: [...STACK_ENV, ENV.FLASHPAY_EVENTS_SECRET],
  examples: ['flashpay recover --stale-after-ms 0'],
};

const EMBEDDED_NOTES = `As root, an embedded PostgreSQL whose folder the postgres user cannot reach lives in
/var/lib/flashpay/<hash>/pg instead; origin.json beside it names the folder, <folder>.moved-to
points back. \`flashpay start\` (and the tests, the bench) remove orphans on their own.
States: running (a postgres process in it: never removed), in use (its origin is there),
orphaned (origin gone, nothing running), unknown origin (moved before origins were recorded:
only prune --legacy removes it).`;

const EMBEDDED_ROOT = {
  name: 'root',
  value: 'DIR',
  description: 'where moved clusters live (default /var/lib/flashpay)',
};
const EMBEDDED_JSON = { name: 'json', description: 'machine-readable output' };

export const EMBEDDED_LIST: CommandSpec = {
  name: 'embedded list',
  synopsis: '[options]',
  summary: 'Every moved cluster: state, size, directory, origin.',
  flags: [EMBEDDED_JSON, EMBEDDED_ROOT],
  env: [],
  notes: EMBEDDED_NOTES,
  examples: ['flashpay embedded list --json'],
};

export const EMBEDDED_PRUNE: CommandSpec = {
  name: 'embedded prune',
  synopsis: '[options]',
  summary: 'Removes orphaned clusters; prints each and a total.',
  flags: [
    EMBEDDED_JSON,
    { name: 'legacy', description: 'also clusters of unknown origin idle for an hour or more' },
    EMBEDDED_ROOT,
  ],
  env: [],
  notes: EMBEDDED_NOTES,
  examples: ['flashpay embedded prune --legacy'],
};

export const EMBEDDED: CommandSpec = {
  name: 'embedded',
  synopsis: 'list|prune [options]',
  summary: 'The embedded clusters moved under /var/lib/flashpay (as root), for operators.',
  positional: { min: 1, max: 1 },
  flags: [
    EMBEDDED_JSON,
    { name: 'legacy', description: 'prune: also clusters of unknown origin idle for an hour' },
    EMBEDDED_ROOT,
  ],
  env: [],
  notes: `commands:\n  list                      ${EMBEDDED_LIST.summary}\n  prune                     ${EMBEDDED_PRUNE.summary}\n\n${EMBEDDED_NOTES}`,
  examples: ['flashpay embedded prune --legacy'],
};
