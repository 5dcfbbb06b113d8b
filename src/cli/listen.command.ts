import {
  createHttpSink,
  databaseNow,
  EVENT_TYPES,
  FOLLOW_BATCH,
  readDeliveredAfter,
  findEvent,
  type DeliveredEvent,
  type Sink,
} from '../outbox/index.ts';
import { loadSecret } from '../platform/auth.ts';
import { loadConfig } from '../platform/config.ts';
import type { Db } from '../platform/db.ts';
import { parseCommand, stringFlag, usageError, UsageError } from '../platform/args.ts';
import { followStack, secretSource } from './listen.stack.ts';
import { LISTEN } from './specs/index.ts';

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

const resendHint = (eventId: string, target: URL) =>
  `resend: flashpay listen --resend ${eventId} --forward-to ${target.toString()}`;

function line(event: DeliveredEvent, json: boolean, forwarded: string | undefined): string {
  const { published_at, ...body } = event;
  if (json) return JSON.stringify({ ...body, delivered_at: published_at, ...(forwarded ? { forwarded } : {}) });
  return `${published_at.toISOString()}  ${event.event_type.padEnd(15)} ${event.order_id} v${event.order_version} event ${event.event_id}${forwarded ? `  -> ${forwarded}` : ''}`;
}

interface Follower {
  seen: Map<string, number>;
  target: URL | undefined;
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
      // The id is on the line already; the hint says how to send it again once the receiver is fixed.
      (error: unknown) => `failed: ${(error as Error).message} (${resendHint(event_id, follower.target!)})`,
    );
  }
  process.stdout.write(`${line(event, follower.json, forwarded)}\n`);
}

/** `--resend ID`: that one delivered event forwarded again, signed as before; exit 1 when it fails. */
async function resend(db: Db, eventId: string, sink: Sink, json: boolean): Promise<void> {
  if (!/^\d{1,18}$/.test(eventId)) throw usageError(LISTEN, `--resend takes an event id (digits); got "${eventId}"`);
  const event = await findEvent(db, eventId);
  if (!event || !event.published_at) {
    process.stderr.write(`flashpay listen: no delivered event ${eventId} in this stack's outbox\n`);
    process.exitCode = 1;
    return;
  }
  const { event_id, order_id, event_type, order_version, payload } = event;
  const forwarded = await sink.deliver({ event_id, order_id, event_type, order_version, payload }).then(
    () => 'ok',
    (error: unknown) => `failed: ${(error as Error).message}`,
  );
  process.stdout.write(`${line({ ...event, published_at: event.published_at }, json, forwarded)}\n`);
  if (forwarded !== 'ok') process.exitCode = 1;
}

/**
 * `flashpay listen`: one line per event as the relay delivers it, from now on, read from the
 * stack's database (never one of its own: no stack, exit 2); with --forward-to, each POSTed to URL
 * signed as the webhook sink signs, so a local receiver can be developed against the real thing.
 * Runs until SIGINT/SIGTERM. `--resend ID` forwards one event again and exits.
 */
export async function listenCommand(argv: string[]): Promise<void> {
  const args = parseCommand(LISTEN, argv);
  const only = eventsFilter(stringFlag(args, 'events'));
  const target = forwardUrl(stringFlag(args, 'forward-to'));
  const resendId = stringFlag(args, 'resend');
  if (resendId !== undefined && !target) throw usageError(LISTEN, '--resend needs --forward-to URL (where to send it)');
  const json = args.flags.has('json');
  const config = loadConfig();
  const stack = await followStack(config, stringFlag(args, 'api'));
  const sink = target
    ? createHttpSink({
        url: target.toString(),
        secret: (await loadSecret(config.eventsSecret, config.dataDir, 'events')).secret,
        timeoutMs: FORWARD_TIMEOUT_MS,
      })
    : undefined;
  process.stderr.write(
    `flashpay listen: ${target ? `signing forwards with ${secretSource(config)}` : 'not forwarding (no --forward-to): nothing is signed'}\n`,
  );
  try {
    if (resendId !== undefined && sink) return await resend(stack.db, resendId, sink, json);
    await follow(stack.db, { seen: new Map(), target, only, sink, json }, stack.described);
  } finally {
    await sink?.close();
    await stack.db.end();
  }
}

async function follow(db: Db, follower: Follower, described: string): Promise<void> {
  let stopping = false;
  const stop = () => (stopping = true);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const startedAt = await databaseNow(db);
  const { seen, only, target } = follower;
  process.stderr.write(
    `flashpay listen: following delivered events of ${described}${only ? ` (${[...only].join(', ')})` : ''}${target ? `, forwarding to ${target}` : ''}; Ctrl-C to stop\n`,
  );
  while (!stopping) {
    const newest = Math.max(startedAt.getTime(), ...seen.values());
    const since = new Date(Math.max(startedAt.getTime(), newest - LATE_MARK_WINDOW_MS));
    let cursor = { at: since.toISOString(), eventId: '0' };
    for (let full = true; full && !stopping;) {
      const read = await readDeliveredAfter(db, cursor);
      for (const event of read.events) await show(event, follower);
      cursor = read.next;
      full = read.events.length === FOLLOW_BATCH;
    }
    for (const [id, at] of seen) if (at < since.getTime()) seen.delete(id);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
