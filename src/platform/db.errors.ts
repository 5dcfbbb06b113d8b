// How flashpay reads a failed statement: which errors mean the database (unreachable, busy, a lost
// COMMIT answer) rather than the statement. Re-exported by db.ts, where callers find them.

/**
 * The commit was sent but its answer was lost (the connection died): the transaction may or may
 * not have committed. Never "nothing was executed"; a keyed retry tells the client which.
 */
export class CommitOutcomeUnknownError extends Error {
  constructor(cause: unknown) {
    super(
      `the COMMIT's answer was lost or not final; the outcome is unknown (${(cause as Error | null)?.message ?? String(cause)})`,
      { cause },
    );
  }
}

// PostgreSQL's WARNING when a wait for a synchronous standby is cut short (a cancel, a terminate):
// "canceling wait for synchronous replication …; the transaction has already committed locally".
export const SYNC_REP_CANCELLED = /wait for synchronous replication/i;

// pg's own error when a statement's answer did not come within query_timeout: the statement may be
// running still, or done. The connection is useless (its answer may yet arrive) and is discarded.
const READ_TIMEOUT = /Query read timeout/;

/**
 * An error met after COMMIT was sent that leaves its outcome open: anything but the server's own
 * refusal. A server error of class 08 or 57P0x is the connection's end, not a refusal (a backend
 * terminated while its COMMIT waited for a synchronous standby has committed locally).
 */
export function isCommitAnswerLost(error: unknown): boolean {
  const code = pgCode(error);
  const fromServer = typeof code === 'string' && (error as { severity?: unknown }).severity !== undefined;
  if (!fromServer) return true;
  return code.startsWith('08') || /^57P0[123]$/.test(code);
}

export function pgCode(error: unknown): string | undefined {
  return (error as { code?: string } | null)?.code;
}

/**
 * 25006 read_only_sql_transaction: the connection is on a server that cannot write (a standby, a
 * demoted or fenced primary). Nothing of the transaction committed.
 */
export function isReadOnlyError(error: unknown): boolean {
  return pgCode(error) === '25006';
}

/**
 * Errors that mean "the database could not be reached", as opposed to a bug in a statement. A
 * server that cannot write counts: the writable primary is what could not be reached.
 */
export function isConnectionError(error: unknown): boolean {
  const code = pgCode(error);
  // 57P01 admin shutdown, 57P02 crash shutdown (another backend died: every session is cut),
  // 57P03 cannot connect now (starting up, shutting down, in recovery), 53300 too many connections.
  if (code && (code.startsWith('08') || /^57P0[123]$/.test(code) || code === '53300' || code === '25006')) return true;
  const message = (error as Error | null)?.message ?? '';
  if (READ_TIMEOUT.test(message)) return true;
  return /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/i.test(
    message,
  );
}

/**
 * lock_timeout or statement_timeout fired, or a serialization failure / deadlock outlived its
 * retries: the transaction rolled back because the database is busy. Never a 500.
 */
export function isBusyError(error: unknown): boolean {
  const code = pgCode(error);
  return code === '55P03' || code === '57014' || code === '40001' || code === '40P01';
}

/** A fault of the database, not of the statement: unreachable, busy, or a commit whose answer was lost. */
export function isDatabaseFault(error: unknown): boolean {
  return error instanceof CommitOutcomeUnknownError || isConnectionError(error) || isBusyError(error);
}
