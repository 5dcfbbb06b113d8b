import pg from 'pg';
import type { Db } from '../platform/db.ts';
import { invariant } from '../platform/errors.ts';
import { routeFor } from '../platform/pg-primary.ts';

/** The channel migration 085's trigger notifies on every statement that inserts outbox rows. */
export const OUTBOX_CHANNEL = 'flashpay_outbox';

// Limits, each with its reason.
const FIRST_RECONNECT_MS = 100; // a killed backend is usually back at once
const MAX_RECONNECT_MS = 5_000; // a database that is down is retried at least this often

export interface WakeupOptions {
  /** The pool whose connection settings the listener copies; it holds its own connection, not one of the pool's. */
  db: Db;
  /**
   * A direct URL of the same database (FLASHPAY_DIRECT_DATABASE_URL): LISTEN needs a session, which
   * a pooler in transaction mode does not keep. When set, the listener connects there, not as the pool.
   */
  url?: string;
  channel?: string;
  /** Called on every notification and after every (re)connect, when notifications may have been missed. */
  onWake: () => void;
  onError?: (error: unknown) => void;
  /** Shows in pg_stat_activity; tests find the backend by it. */
  applicationName?: string;
}

export interface WakeupListener {
  /** True while LISTEN is in place. */
  readonly listening: boolean;
  /** Resolves once the first LISTEN is in place (or after a failed first try; reconnects go on). */
  readonly ready: Promise<void>;
  stop(): Promise<void>;
}

/**
 * LISTEN on a dedicated connection (a pooled one would be handed to others). A dropped connection
 * (pg_terminate_backend, a restart) never ends the process: its 'error' is handled here, and the
 * listener reconnects with a growing delay and wakes the relay once, because notifications sent
 * meanwhile were lost. The relay's polling stays the fallback for exactly that gap.
 */
export function listenForWakeups(options: WakeupOptions): WakeupListener {
  const channel = options.channel ?? OUTBOX_CHANNEL;
  invariant(/^[a-z_][a-z0-9_]{0,62}$/.test(channel), 'channel must be a plain lowercase identifier');
  const onError = options.onError ?? ((error: unknown) => console.error('[outbox listener]', error));
  let stopped = false;
  let listening = false;
  let client: pg.Client | undefined;
  let timer: NodeJS.Timeout | undefined;
  let delayMs = FIRST_RECONNECT_MS;
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));

  function connect(): void {
    if (stopped) return;
    // The pool's own Client class: on a multi-host URL the listener, too, connects only to the
    // writable primary, and after a failover its reconnects find the new one (pg-primary.ts).
    const direct = options.url === undefined ? undefined : routeFor(options.url);
    const Client = direct
      ? (direct.Client ?? pg.Client)
      : ((options.db.options as { Client?: typeof pg.Client }).Client ?? pg.Client);
    const current = new Client({
      ...(direct ? { connectionString: direct.connectionString } : options.db.options),
      application_name: options.applicationName ?? 'flashpay-outbox-listener',
      keepAlive: true,
    });
    client = current;
    let lost = false;
    const onLost = (error?: unknown): void => {
      if (lost) return;
      lost = true;
      listening = false;
      current.removeAllListeners('notification');
      void current.end().catch(() => undefined);
      if (stopped) return;
      if (error !== undefined) onError(error);
      timer = setTimeout(connect, delayMs);
      delayMs = Math.min(delayMs * 2, MAX_RECONNECT_MS);
      markReady();
    };
    current.on('error', (error) => onLost(error));
    current.on('end', () => onLost());
    current.on('notification', (message) => {
      if (message.channel === channel) options.onWake();
    });
    current
      .connect()
      .then(() => current.query(`LISTEN ${channel}`))
      .then(() => {
        if (lost) return;
        listening = true;
        delayMs = FIRST_RECONNECT_MS;
        markReady();
        options.onWake(); // rows inserted while we were not listening
      })
      .catch(onLost);
  }

  connect();
  return {
    get listening() {
      return listening;
    },
    ready,
    async stop() {
      stopped = true;
      clearTimeout(timer);
      listening = false;
      await client?.end().catch(() => undefined);
    },
  };
}
