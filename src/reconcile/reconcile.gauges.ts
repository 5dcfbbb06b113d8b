import { Gauge } from 'prom-client';
import { businessRegistry } from '../platform/business-metrics.ts';
import type { Db } from '../platform/db.ts';
import { PENDING_STATUSES } from './reconcile.rules.ts';

// What the alert rules of a sale read (deploy/prometheus/flashpay.rules.yml, docs/runbook.md): the
// state of the orders and of the outbox, read from the database when /metrics is scraped, never on
// a request's path. Reconciliation is the one module that reads other modules' tables (one
// statement over indexes: orders_open, orders_attention_open, the outbox's unpublished rows).

/** Notes counted at most: past this many the alert has long fired, and the count stays cheap. */
const MAX_NOTES_COUNTED = 1_000;

const SQL = `
SELECT (SELECT min(updated_at) FROM orders WHERE status = ANY($1::text[])) AS oldest_unfinished,
       (SELECT count(*)::int FROM (SELECT 1 FROM orders
          WHERE attention IS NOT NULL AND attention_acked_at IS NULL
            AND (attention_version IS NULL OR attention_version = version) LIMIT $2) n) AS notes,
       (SELECT count(*)::int FROM outbox WHERE published_at IS NULL AND dead_at IS NULL) AS pending,
       (SELECT min(created_at) FROM outbox WHERE published_at IS NULL AND dead_at IS NULL) AS oldest_pending,
       (SELECT count(*)::int FROM outbox WHERE dead_at IS NOT NULL AND published_at IS NULL) AS dead`;

interface Row {
  oldest_unfinished: Date | null;
  notes: number;
  pending: number;
  oldest_pending: Date | null;
  dead: number;
}

let source: { db: Db; now: () => Date } | undefined;
let row: Row | undefined;
let up = 0;

// One read per scrape for all the gauges: prom-client collects them at once, so they share the
// read in flight (or one finished within FRESH_MS).
const FRESH_MS = 500;
let reading: Promise<void> | undefined;
let readAt = 0;

function fresh(): Promise<void> {
  if (!reading || Date.now() - readAt > FRESH_MS) {
    readAt = Date.now();
    reading = read();
  }
  return reading;
}

async function read(): Promise<void> {
  if (!source) return;
  try {
    row = (await source.db.query<Row>(SQL, [[...PENDING_STATUSES], MAX_NOTES_COUNTED])).rows[0];
    up = 1;
  } catch {
    // The database did not answer (a failover): the alert on flashpay_database_up says so.
    row = undefined;
    up = 0;
  }
}

const ageSeconds = (since: Date | null | undefined) =>
  since && source ? Math.max(0, (source.now().getTime() - since.getTime()) / 1000) : 0;

function gauge(name: string, help: string, value: () => number): void {
  new Gauge({
    name,
    help,
    registers: [businessRegistry],
    async collect() {
      await fresh();
      this.set(value());
    },
  });
}

// Registered once per process (prom-client refuses a name twice); the last app built reads.
let registered = false;

/** Reads the sale's gauges from `db` on every scrape of /metrics. */
export function registerSaleGauges(db: Db, now: () => Date = () => new Date()): void {
  source = { db, now };
  reading = undefined;
  if (registered) return;
  registered = true;
  gauge(
    'flashpay_database_up',
    'The database answered the last scrape (0: unreachable, e.g. during a failover)',
    () => up,
  );
  gauge(
    'flashpay_orders_unfinished_oldest_seconds',
    'Age of the oldest order in an unfinished status (PAYING, UNKNOWN, REFUNDING, PENDING, RELEASING) since it last changed',
    () => ageSeconds(row?.oldest_unfinished),
  );
  gauge(
    'flashpay_attention_open',
    `Open notes for a person (counted up to ${MAX_NOTES_COUNTED})`,
    () => row?.notes ?? 0,
  );
  gauge('flashpay_outbox_pending', 'Outbox events not yet delivered (dead ones excluded)', () => row?.pending ?? 0);
  gauge('flashpay_outbox_oldest_pending_seconds', 'Age of the oldest undelivered outbox event: the relay lag', () =>
    ageSeconds(row?.oldest_pending),
  );
  gauge(
    'flashpay_outbox_dead',
    'Outbox events parked as dead, waiting for a person to re-drive them',
    () => row?.dead ?? 0,
  );
}
