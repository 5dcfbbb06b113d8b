import type { Config } from '../platform/config.ts';
import { createPool, type Db } from '../platform/db.ts';
import { UsageError } from '../platform/args.ts';
import { readRuntime } from '../runtime.ts';

// How long the stack named by --api has to answer /healthz before listen says it is out of reach.
const HEALTH_TIMEOUT_MS = 5_000;

/** The stack listen follows: its database (where the delivered events are) and how it was found. */
export interface FollowedStack {
  db: Db;
  /** For the opening line: what listen follows. */
  described: string;
}

const NO_STACK =
  'flashpay listen: no stack in reach: run `flashpay start` in this directory (listen follows it), or give its database ' +
  'with DATABASE_URL (and --api URL for its API); listen never starts a database of its own';

async function answers(api: string): Promise<string | undefined> {
  try {
    const response = await fetch(new URL('/healthz', api), { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) });
    return response.ok ? undefined : `GET /healthz answered ${response.status}`;
  } catch (error) {
    return (error as Error).message;
  }
}

const sameStack = (a: string, b: string) =>
  URL.canParse(a) && URL.canParse(b) && new URL(a).origin === new URL(b).origin;

/** Where the events are: the running stack of this directory, DATABASE_URL, or (--api) the stack at URL. */
async function databaseOf(config: Config, api: string | undefined): Promise<{ url: string; described: string }> {
  const running = await readRuntime(config);
  if (api !== undefined) {
    if (!URL.canParse(api) || !/^https?:$/.test(new URL(api).protocol))
      throw new UsageError(`flashpay listen: --api takes the stack's http(s) URL; got "${api}"`);
    const problem = await answers(api);
    if (problem)
      throw new UsageError(
        `flashpay listen: no stack in reach at ${api} (${problem}); listen never starts one of its own`,
      );
    if (running && sameStack(running.api, api)) return { url: running.databaseUrl, described: `the stack at ${api}` };
    if (config.databaseUrl)
      return { url: config.databaseUrl, described: `the stack at ${api} (its database: DATABASE_URL)` };
    throw new UsageError(
      `flashpay listen: the stack at ${api} is not the one started in this directory (${config.dataDir}): listen reads its ` +
        'delivered events from its database; set DATABASE_URL to that database (or FLASHPAY_DATA_DIR to its .flashpay)',
    );
  }
  if (config.databaseUrl) return { url: config.databaseUrl, described: 'the stack whose database is DATABASE_URL' };
  if (running) return { url: running.databaseUrl, described: `the stack at ${running.api} (pid ${running.pid})` };
  throw new UsageError(NO_STACK);
}

/** Finds the stack and connects to its database, or refuses (exit 2) with what to do. */
export async function followStack(config: Config, api: string | undefined): Promise<FollowedStack> {
  const { url, described } = await databaseOf(config, api);
  const db = createPool(url, 2);
  try {
    await db.query('SELECT 1');
  } catch (error) {
    await db.end();
    throw new UsageError(
      `flashpay listen: no stack in reach: its database does not answer (${(error as Error).message})`,
    );
  }
  return { db, described };
}

/** Where the forwards' signing secret comes from, said at start (CONTRACT "second pass"). */
export function secretSource(config: Config): string {
  if (config.eventsSecret) return 'FLASHPAY_EVENTS_SECRET';
  return (
    `the DEVELOPMENT DEFAULT in ${config.dataDir}/events.secret (not for production; set ` +
    'FLASHPAY_EVENTS_SECRET to the secret your receiver checks)'
  );
}
