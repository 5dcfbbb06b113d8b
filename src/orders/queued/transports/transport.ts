import type { Db } from '../../../platform/db.ts';
import { receiveStockRequests, type StockRequest } from '../../../stock/index.ts';
import { receiveStockResult, type StockResult } from '../results.ts';
import { receiveStockResults } from '../results.many.ts';

// How stock requests and results travel between the shop and the stock service. `send*` resolves
// only once the message is durable on its way (the far side's inbox row committed, or the broker's
// publisher confirm for a persistent message on a durable queue); only then does the relay mark its outbox row published (at least once, deduplicated at
// the far side by request key / event id).

export interface StockTransport {
  readonly name: 'database' | 'amqp' | 'jetstream';
  sendRequests(requests: readonly StockRequest[], now: Date): Promise<void>;
  /** Resolves with the results accepted; one that failed is retried on a later pass. */
  sendResult(result: StockResult, now: Date): Promise<void>;
  /** A pass's results at once (the database transport: one transaction per run of them). On a throw the caller sends them one by one; the inbox absorbs any already taken. */
  sendResults?(results: readonly StockResult[], now: Date): Promise<void>;
  /** Starts this process's consumers (broker transports); idempotent, called at every pass. */
  start?(): Promise<void>;
  close(): Promise<void>;
}

/** The embedded default: the far side's inbox is a table in reach, so delivering is inserting. */
export function databaseTransport(shopDb: Db, stockDb: Db): StockTransport {
  return {
    name: 'database',
    async sendRequests(requests, now) {
      await receiveStockRequests(stockDb, requests, now);
    },
    async sendResult(result, now) {
      await receiveStockResult(shopDb, result, now);
    },
    async sendResults(results, now) {
      await receiveStockResults(shopDb, results, now);
    },
    async close() {},
  };
}
