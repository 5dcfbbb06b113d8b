import type { Clock } from '../../platform/clock.ts';
import { inTx, type Db, type Tx } from '../../platform/db.ts';
import type { LeasedRow } from '../../platform/lease-queue.ts';
import {
  applyStockBatch,
  claimStockResults,
  failStockResult,
  markStockResultsSent,
  parkStockResult,
  receiveStockRequestsIn,
  STOCK_REQUEST_KINDS,
  stockServiceHasWork,
  takeStockResults,
} from '../../stock/index.ts';
import {
  claimStockRequests,
  failStockRequest,
  markStockRequestsSent,
  parkStockRequest,
  resendUnansweredRequests,
  shopHasStockWork,
  STOCK_RESULT_TYPES,
  takeStockRequests,
} from './results.ts';
import { receiveStockResultsIn } from './results.many.ts';
import { syncMirrorMoves } from './mirror.ts';
import { databaseTransport, type StockTransport } from './transports/transport.ts';
import { defaultOwner } from '../../outbox/index.ts';

// Queued orders, wired (seed 004): the shop's stock outbox → the stock service's inbox → its batches
// → its result outbox → the shop's inbox and the order decider. With no broker the database carries
// both directions ("deliver" is an insert into the far side's inbox) by the same claim / dedup / mark
// as a broker. `shopDb` and `stockDb` are one pool when the stock service runs in `flashpay start`.

// Limits, each with its reason.
const CLAIM_BATCH = 1_000; // one claim locks at most this many outbox rows (each step is set-based)
const MAX_PASSES = 1_000; // a drain ends even while buyers keep the queue full

export interface StockPumpOptions {
  shopDb: Db;
  stockDb: Db;
  clock: Clock;
  owner?: string;
  /** A claim older than this is taken over by another process (contract: 30 s). */
  leaseMs: number;
  /** PENDING / RELEASING with no answer for this long: the same request is sent again. */
  resendAfterMs: number;
  onError?: (error: unknown) => void;
  /** Which steps this process runs: the shop's (relay requests, apply results), the stock service's (apply batches), or both. */
  roles?: PumpRoles;
  /** drain() runs a pass's three steps at once (default); false: one after the other, as runOnce does. */
  overlap?: boolean;
  /** Default: the database carries requests and results (orders/queued/transports/transport.ts). */
  transport?: StockTransport;
}

export interface PumpRoles {
  shop: boolean;
  stock: boolean;
  /** Relay the stock service's results (default: with `stock`). Split databases over the database transport: the shop does. */
  results?: boolean;
  /** The stock service has its own database (FLASHPAY_STOCK_SERVICE=separate): the shop sends its mirror's moves, the stock service asks for mirrors and publishes SKU definitions. */
  apart?: boolean;
}

export interface PumpPass {
  requests: number;
  applied: number;
  results: number;
  resent: number;
}

export interface StockPump {
  readonly owner: string;
  /** One pass: re-send the unanswered, relay requests, apply one batch, relay results. */
  runOnce(): Promise<PumpPass>;
  /** Passes until one moves nothing. */
  drain(): Promise<PumpPass>;
  close(): Promise<void>;
}

export function createStockPump(options: StockPumpOptions): StockPump {
  const owner = options.owner ?? defaultOwner();
  const onError = options.onError ?? ((error: unknown) => console.error(`[stock ${owner}]`, error));
  const transport = options.transport ?? databaseTransport(options.shopDb, options.stockDb);
  const claim = () => ({ owner, now: options.clock.now(), leaseMs: options.leaseMs, limit: CLAIM_BATCH });
  const roles = options.roles ?? { shop: true, stock: true };
  const knownRequest = (r: LeasedRow) => (STOCK_REQUEST_KINDS as readonly string[]).includes(r.event_type);
  const knownResult = (r: LeasedRow) => (STOCK_RESULT_TYPES as readonly string[]).includes(r.event_type);
  const requestOf = (r: LeasedRow) => ({
    request_key: r.key,
    order_id: r.order_id,
    event_type: r.event_type,
    payload: r.payload,
  });
  const resultOf = (r: LeasedRow) => ({
    event_id: `stock-${r.key}`,
    order_id: r.order_id,
    event_type: r.event_type,
    payload: r.payload,
  });

  // Both sides in one database over the database transport: a relay step takes its rows, delivers
  // them (the far side's inbox and what it applies) and marks them sent in ONE transaction. No lease
  // is needed (a crash rolls all of it back), and each row is written once instead of claimed, then
  // marked: one durable commit where there were three (docs/benchmarks/journal.md §20). Anything the move
  // does not take (an unknown type, a result that needs more than the decider) or an error (reported):
  // it rolls back, and the pass takes the leased path below, which parks, fails or retries row by row.
  const local = options.transport === undefined && options.shopDb === options.stockDb && roles.apart !== true;

  async function moveLocally(move: (tx: Tx) => Promise<number | undefined>): Promise<number | undefined> {
    const notHere = new Error('not for the local move');
    try {
      return await inTx(
        options.shopDb,
        async (tx) => {
          const moved = await move(tx);
          if (moved === undefined) throw notHere;
          return moved;
        },
        { pipeline: true },
      );
    } catch (error) {
      // Rolled back. A row it does not take is routine; an error is reported, and the leased path
      // below meets it again row by row.
      if (error !== notHere) onError(error);
      return undefined;
    }
  }

  async function relayRequests(): Promise<number> {
    if (local) {
      const moved = await moveLocally(async (tx) => {
        const rows = await takeStockRequests(tx, claim());
        if (!rows.every(knownRequest)) return undefined;
        await receiveStockRequestsIn(tx, rows.map(requestOf), options.clock.now());
        return rows.length;
      });
      if (moved !== undefined) return moved;
    }
    const rows = await claimStockRequests(options.shopDb, claim());
    const known = rows.filter(knownRequest);
    for (const r of rows.filter((x) => !known.includes(x))) {
      await parkStockRequest(
        options.shopDb,
        r.key,
        owner,
        `unknown stock request type "${r.event_type}"`,
        options.clock.now(),
      );
      onError(new Error(`stock request ${r.key} has unknown type "${r.event_type}"; parked`));
    }
    if (known.length === 0) return rows.length;
    try {
      await transport.sendRequests(known.map(requestOf), options.clock.now());
    } catch (error) {
      for (const r of known) await failStockRequest(options.shopDb, r.key, owner, (error as Error).message);
      throw error;
    }
    // After the far side has it, before the mark: a crash here re-sends, and its inbox absorbs the copy.
    await markStockRequestsSent(
      options.shopDb,
      known.map((r) => r.key),
      owner,
      options.clock.now(),
    );
    return rows.length;
  }

  async function relayResults(): Promise<number> {
    if (local) {
      const moved = await moveLocally(async (tx) => {
        const rows = await takeStockResults(tx, claim());
        if (!rows.every(knownResult)) return undefined;
        const effects = await receiveStockResultsIn(tx, rows.map(resultOf), options.clock.now());
        return effects === undefined ? undefined : rows.length;
      });
      if (moved !== undefined) return moved;
    }
    const rows = await claimStockResults(options.stockDb, claim());
    const sent: string[] = [];
    const known = rows.filter(knownResult);
    if (transport.sendResults && known.length > 0) {
      try {
        await transport.sendResults(known.map(resultOf), options.clock.now());
        sent.push(...known.map((r) => r.key));
      } catch (error) {
        // One result the batch could not take must not hold back the others: one at a time below.
        onError(error);
      }
    }
    const delivered = new Set(sent);
    for (const r of rows) {
      if (delivered.has(r.key)) continue;
      if (!knownResult(r)) {
        await parkStockResult(
          options.stockDb,
          r.key,
          owner,
          `unknown stock result type "${r.event_type}"`,
          options.clock.now(),
        );
        onError(new Error(`stock result ${r.key} has unknown type "${r.event_type}"; parked`));
        continue;
      }
      try {
        await transport.sendResult(resultOf(r), options.clock.now());
        sent.push(r.key);
      } catch (error) {
        await failStockResult(options.stockDb, r.key, owner, (error as Error).message);
        onError(error);
      }
    }
    await markStockResultsSent(options.stockDb, sent, owner, options.clock.now());
    return rows.length;
  }

  async function runOnce(overlap = false): Promise<PumpPass> {
    const resent = roles.shop
      ? await resendUnansweredRequests(options.shopDb, options.clock.now(), options.resendAfterMs)
      : 0;
    // Split databases: what the decider, the sweep or an operator did to a mirror becomes requests.
    const mirrored = roles.shop && roles.apart ? await syncMirrorMoves(options.shopDb, options.clock.now()) : 0;
    await transport.start?.();
    const relay = async () => (roles.shop ? relayRequests() : 0);
    const apply = async () =>
      roles.stock
        ? applyStockBatch(options.stockDb, options.clock.now(), undefined, { apart: roles.apart === true })
        : 0;
    // Results are the stock service's outbox: it publishes them, the shop's inbox takes them.
    const answer = async () => ((roles.results ?? roles.stock) ? relayResults() : 0);
    // Overlapped (drain): the three steps work on different rows, each as safely as two pumps
    // would; a step that moved nothing moved nothing, so a pass of zeros still means empty.
    const [requests, applied, results] = overlap
      ? await Promise.all([relay(), apply(), answer()])
      : [await relay(), await apply(), await answer()];
    if (mirrored > 0 && requests === 0) return { requests: mirrored, applied, results, resent };
    return { requests, applied, results, resent };
  }

  /**
   * Whether a pass could move anything (one statement per database side, on partial indexes): an
   * idle `flashpay start` asked this every 100 ms instead of running a pass of about ten
   * statements in three transactions. With split databases a pass also sends the mirror's moves,
   * so it always runs.
   */
  async function anythingToDo(): Promise<boolean> {
    if (roles.apart) return true;
    await transport.start?.(); // a broker's consumers fill the inbox asked about below
    const results = roles.results ?? roles.stock;
    const asks = [
      roles.shop ? shopHasStockWork(options.shopDb, options.clock.now(), options.resendAfterMs) : false,
      roles.stock || results ? stockServiceHasWork(options.stockDb, { inbox: roles.stock, outbox: results }) : false,
    ];
    return (await Promise.all(asks)).some(Boolean);
  }

  return {
    owner,
    runOnce: () => runOnce(),
    close: () => transport.close(),
    async drain() {
      const total: PumpPass = { requests: 0, applied: 0, results: 0, resent: 0 };
      if (!(await anythingToDo())) return total;
      for (let pass = 0; pass < MAX_PASSES; pass++) {
        const p = await runOnce(options.overlap !== false);
        total.requests += p.requests;
        total.applied += p.applied;
        total.results += p.results;
        total.resent += p.resent;
        if (p.requests + p.applied + p.results === 0) break;
      }
      return total;
    },
  };
}
