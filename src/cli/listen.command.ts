import {
  createHttpSink,
  databaseNow,
  EVENT_TYPES,
  FOLLOW_BATCH,
  readDeliveredAfter,
  type DeliveredEvent,
  type Sink,
} from '../outbox/index.ts';
import { loadSecret } from '../platform/auth.ts';
import { loadConfig } from '../platform/config.ts';
import { createPool } from '../platform/db.ts';
import { parseArgs, refuseUnknownFlags, stringFlag, UsageError } from '../platform/args.ts';
import { openDatabase } from '../runtime.ts';

// How often the outbox is read for newly delivered events, and how far back each read looks: a
// relay's mark can commit after a later one with an earlier timestamp; re-reading this window and
// dropping event ids already printed catches it.
const POLL_MS = 200;
const LATE_MARK_WINDOW_MS = 5_000;
// A forward is one attempt with this timeout; a failure is printed and the follower moves on.
const FORWARD_TIMEOUT_MS = 5_000;

function eventsFilter(raw: string | undefined): Set<string> | undefined {
  if (raw === undefined) return undefined;
  const names = raw
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  const unknown = names.filter((name) => !(EVENT_TYPES as readonly string[]).includes(name));
  if (names.length === 0 || unknown.length > 0)
    throw new UsageError(`--events takes a list of ${EVENT_TYPES.join(', ')}; got "${raw}"`);
  return new Set(names);
}

function forwardUrl(raw: string | undefined): URL | undefined {
  if (raw === undefined) return undefined;
  const url = URL.canParse(raw) ? new URL(raw) : undefined;
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
    throw new UsageError(`--forward-to takes an http(s) URL; got "${raw}"`);
  return url;
}

function line(event: DeliveredEvent, json: boolean, forwarded: string | undefined): string {
  const { published_at, ...body } = event;
  if (json) return JSON.stringify({ ...body, delivered_at: published_at, ...(forwarded ? { forwarded } : {}) });
  return `${published_at.toISOString()}  ${event.event_type.padEnd(15)} ${event.order_id} v${event.order_version} event ${event.event_id}${forwarded ? `  -> ${forwarded}` : ''}`;
}

interface Follower {
  seen: Map<string, number>;
  only: Set<string> | undefined;
  sink: Sink | undefined;
  json: boolean;
}

/** Prints (and forwards) an event once. */
async function show(event: DeliveredEvent, follower: Follower): Promise<void> {
  if (follower.seen.has(event.event_id)) return;
  follower.seen.set(event.event_id, event.published_at.getTime());
  if (follower.only && !follower.only.has(event.event_type)) return;
  let forwarded: string | undefined;
  if (follower.sink) {
    const { event_id, order_id, event_type, order_version, payload } = event;
    forwarded = await follower.sink.deliver({ event_id, order_id, event_type, order_version, payload }).then(
      () => 'ok',
      (error: unknown) => `failed: ${(error as Error).message}`,
    );
  }
  process.stdout.write(`${line(event, follower.json, forwarded)}\n`);
}

/**
 * `flashpay listen [--forward-to URL] [--events ORDER_PAID,…] [--json]`: one line per event as the
 * relay delivers it, from now on; with --forward-to, each POSTed to URL signed as the webhook sink
 * signs (Flashpay-Signature with FLASHPAY_EVENTS_SECRET), so a local receiver can be developed
 * against the real thing. Runs until SIGINT/SIGTERM.
 */
export async function listenCommand(argv: string[]): Promise<void> {
  const args = parseArgs(argv, ['json']);
  refuseUnknownFlags('listen', args, ['forward-to', 'events', 'json']);
  const only = eventsFilter(stringFlag(args, 'events'));
  const target = forwardUrl(stringFlag(args, 'forward-to'));
  const json = args.flags.has('json');
  const config = loadConfig();
  const database = await openDatabase(config, (message) => process.stderr.write(`${message}\n`));
  const db = createPool(database.url, 2);
  const secret = (await loadSecret(config.eventsSecret, config.dataDir, 'events')).secret;
  const sink = target ? createHttpSink({ url: target.toString(), secret, timeoutMs: FORWARD_TIMEOUT_MS }) : undefined;

  let stopping = false;
  const stop = () => (stopping = true);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const startedAt = await databaseNow(db);
  const seen = new Map<string, number>(); // event_id → published_at (ms), kept for the window
  process.stderr.write(
    `flashpay listen: following delivered events${only ? ` (${[...only].join(', ')})` : ''}${target ? `, forwarding to ${target}` : ''}; Ctrl-C to stop\n`,
  );
  try {
    while (!stopping) {
      const newest = Math.max(startedAt.getTime(), ...seen.values());
      const since = new Date(Math.max(startedAt.getTime(), newest - LATE_MARK_WINDOW_MS));
      let cursor = { at: since.toISOString(), eventId: '0' };
      for (let full = true; full && !stopping;) {
        const read = await readDeliveredAfter(db, cursor);
        for (const event of read.events) await show(event, { seen, only, sink, json });
        cursor = read.next;
        full = read.events.length === FOLLOW_BATCH;
      }
      for (const [id, at] of seen) if (at < since.getTime()) seen.delete(id);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  } finally {
    await sink?.close();
    await db.end();
    await database.embedded?.stop();
  }
}
