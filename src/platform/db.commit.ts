import type pg from 'pg';
import { CommitOutcomeUnknownError, SYNC_REP_CANCELLED } from './db.errors.ts';

// How a transaction of inTx (db.ts) ends: the statements sent with its COMMIT, pipelined or not,
// and what the server's answer to COMMIT says about its outcome.

// Statements a transaction sends with its COMMIT (sendWithCommit), per checked-out client.
export const withCommit = new WeakMap<object, pg.QueryConfig[]>();

/**
 * Sends `query` with the transaction's `COMMIT` (in the same round trip when the transaction is
 * pipelined, just before it otherwise). Its error fails the transaction, and nothing of it commits.
 */
export function sendWithCommit(tx: pg.PoolClient, query: pg.QueryConfig): void {
  const list = withCommit.get(tx);
  if (list) list.push(query);
  else withCommit.set(tx, [query]);
}

// pg 8.23's pipeline mode (`pipeline` client option, read on every send): a statement is written at
// once instead of after the previous one's ReadyForQuery. Switched on for one transaction of a pooled
// client, and off again only after its last statement (COMMIT or ROLLBACK) has been answered, when the
// client's queues are empty, so the pool's other users never see it.
export type Switchable = { pipeline: boolean; connection?: { stream?: { cork?(): void; uncork?(): void } } };

/**
 * Runs `send` (which writes statements synchronously) with the socket corked, so that pipelined
 * statements leave in one write: one syscall and one wake-up of the backend instead of one per
 * statement (on loopback the sender's write also pays the receiver's side of TCP).
 */
export function inOneWrite<T>(client: pg.PoolClient, send: () => T): T {
  const stream = (client as unknown as Switchable).connection?.stream;
  stream?.cork?.();
  try {
    return send();
  } finally {
    stream?.uncork?.();
  }
}

/**
 * COMMIT, and what the server said while it ran: a cancel (pg_cancel_backend, a pooler's) during
 * the wait for a synchronous standby makes PostgreSQL answer COMMIT with a WARNING, the commit
 * local only; a failover may then lose it. Told as unknown, never as done.
 */
export async function commitWith(client: pg.PoolClient, pipelined: boolean, onSent: () => void): Promise<void> {
  let localOnly: { message?: string } | undefined;
  const onNotice = (notice: { message?: string }) => {
    if (SYNC_REP_CANCELLED.test(notice.message ?? '')) localOnly = notice;
  };
  client.on('notice', onNotice);
  try {
    await sendCommit(client, pipelined, onSent);
  } finally {
    client.removeListener('notice', onNotice);
  }
  if (localOnly) throw new CommitOutcomeUnknownError(new Error(localOnly.message));
}

async function sendCommit(client: pg.PoolClient, pipelined: boolean, onSent: () => void): Promise<void> {
  const last = withCommit.get(client) ?? [];
  withCommit.delete(client);
  if (!pipelined) {
    for (const query of last) await client.query(query);
    onSent();
    await client.query('COMMIT');
    return;
  }
  const [sent, commit] = inOneWrite(client, () => {
    const statements = last.map((query) => client.query(query));
    onSent();
    return [statements, client.query('COMMIT')] as const;
  });
  const settled = await Promise.allSettled([...sent, commit]);
  const failed = settled.find((s) => s.status === 'rejected');
  if (failed) throw failed.reason;
  // A statement that failed made PostgreSQL answer the COMMIT with a rollback; it was reported above.
  const outcome = settled.at(-1) as PromiseFulfilledResult<pg.QueryResult>;
  if (outcome.value.command !== 'COMMIT') throw new RolledBackError(outcome.value.command);
}

/** The server answered COMMIT with ROLLBACK (a statement sent with it failed): known, nothing committed. */
export class RolledBackError extends Error {
  constructor(command: string) {
    super(`the transaction ended in ${command}`);
  }
}
