import type { CommandSpec } from '../../platform/args.ts';
import { ENV } from './env.ts';

export const START: CommandSpec = {
  name: 'start',
  synopsis: '[options]',
  summary:
    'The whole stack in one process: the API, the fake payment channel and the background loops.\n' +
    'Migrates on boot (unless FLASHPAY_MIGRATE_ON_START=0); writes FLASHPAY_DATA_DIR/runtime.json so the other commands find it.',
  flags: [
    {
      name: 'port',
      value: 'N',
      description: 'the API’s port (default 8080, FLASHPAY_PORT); 0: free ports, one JSON line',
    },
    {
      name: 'channel-port',
      value: 'N',
      description: 'the fake channel’s port (default 8081; with --port 0, a free one)',
    },
    {
      name: 'role',
      value: 'all|api|worker',
      description: 'api serves requests only; worker (= all) also runs the loops',
    },
    { name: 'no-workers', description: 'as --role api' },
    { name: 'control', description: 'the channel’s /_control API on (what `flashpay trigger` drives)' },
    { name: 'production', description: 'refuse development secrets and the built-in double (as NODE_ENV=production)' },
  ],
  env: [
    ENV.DATABASE_URL,
    { name: 'FLASHPAY_PORT', description: 'the API’s port when --port is not given' },
    { name: 'FLASHPAY_MIGRATE_ON_START', description: '0: leave the schema to `flashpay migrate` (rolling deploys)' },
    ENV.FLASHPAY_DATA_DIR,
    ENV.FLASHPAY_PG_PORT,
    ENV.FLASHPAY_JWT_SECRET,
    ENV.FLASHPAY_EVENTS_SECRET,
    ENV.FLASHPAY_NOTIFY_SECRET,
    ENV.FLASHPAY_PROVIDER,
    { name: '(and more)', description: 'every variable in the README’s "Configuration" table' },
  ],
  examples: ['flashpay start --control', 'flashpay start --port 0 --role api'],
};

export const CHANNEL: CommandSpec = {
  name: 'channel',
  synopsis: '[options]',
  summary: 'The fake payment channel alone; its ledger in memory unless given a database.',
  flags: [
    {
      name: 'port',
      value: 'N',
      description: 'its port (default 8081, FLASHPAY_CHANNEL_PORT); 0: a free one, one JSON line',
    },
    {
      name: 'host',
      value: 'ADDRESS',
      description: 'the address it listens on (default 127.0.0.1, FLASHPAY_CHANNEL_HOST)',
    },
    { name: 'control', description: 'the /_control API on (faults, callbacks, requests)' },
    {
      name: 'database-url',
      value: 'URL',
      description: 'keep the ledger in this PostgreSQL database (created if missing)',
    },
  ],
  env: [
    ENV.FLASHPAY_NOTIFY_SECRET,
    ENV.FLASHPAY_CONTROL_TOKEN,
    { name: 'FLASHPAY_CHANNEL_DATABASE_URL', description: 'as --database-url' },
    ENV.FLASHPAY_DATA_DIR,
  ],
  examples: ['flashpay channel --port 0 --control'],
};

export const DOUBLE: CommandSpec = {
  name: 'double',
  synopsis: 'stripe|alipay [options]',
  summary:
    'A local double of a real provider speaking its wire format, with the fake channel’s ledger.\n' +
    'Prints {"url": URL}; development and tests only.',
  positional: { min: 1, max: 1 },
  flags: [
    { name: 'port', value: 'N', description: 'its port (default a free one)' },
    { name: 'host', value: 'ADDRESS', description: 'the address it listens on (default 127.0.0.1)' },
    { name: 'control', description: 'the /_control API on' },
    { name: 'webhook', value: 'URL', description: 'Stripe only: the webhook endpoint it notifies' },
    { name: 'env', description: 'also print the variables that point flashpay at it' },
  ],
  env: [ENV.FLASHPAY_DATA_DIR, ENV.FLASHPAY_CONTROL_TOKEN],
  examples: ['flashpay double stripe --env --webhook http://127.0.0.1:8080/v1/stripe/webhook'],
};

const STOCK_FLAGS = [
  { name: 'port', value: 'N', description: 'its port (default 8082); 0: a free one' },
  { name: 'host', value: 'ADDRESS', description: 'the address it listens on (default 127.0.0.1)' },
  {
    name: 'database-url',
    value: 'URL',
    description: 'the database whose stock it applies (see FLASHPAY_STOCK_SERVICE)',
  },
];
const STOCK_ENV = [
  { name: 'FLASHPAY_STOCK_SERVICE', description: 'external: the shops’ database; separate: a database of its own' },
  ENV.DATABASE_URL,
  ENV.FLASHPAY_STOCK_DATABASE_URL,
  ENV.FLASHPAY_DATA_DIR,
  ENV.FLASHPAY_PG_PORT,
];
const STOCK_SUMMARY =
  'The stock service as its own process: applies stock requests in batches and serves the SKU\n' +
  'admin routes on its own port. Prints {"inventory": URL, "stock": URL}.';

export const INVENTORY: CommandSpec = {
  name: 'inventory',
  synopsis: '[options]',
  summary: STOCK_SUMMARY,
  flags: STOCK_FLAGS,
  env: STOCK_ENV,
  examples: ['FLASHPAY_STOCK_SERVICE=separate flashpay inventory --port 8082'],
};

export const STOCK: CommandSpec = {
  ...INVENTORY,
  name: 'stock',
  summary: `${STOCK_SUMMARY}\nThe same as \`flashpay inventory\`.`,
};
