import { isDatabaseFault } from '../platform/db.ts';
import { jsonResponse, type StoredResponse } from '../idempotency/index.ts';

/**
 * Records what the provider said, once the provider has been called. From that moment no failure
 * of ours may be answered as if nothing happened — not a database fault's 503 ("nothing was
 * executed"), and not a 500 either (issue 40: a trigger's or a constraint's error in the last
 * commit answered 500 while the money had moved): a client that believes it orders again and
 * pays twice. The answer is then the contract's UNKNOWN; the key stays PROCESSING under its lease
 * (a retry with it waits, then takes it over and answers the order's status), and the order,
 * still PAYING, is converged by recovery. An error that is not a database fault is a bug or a
 * broken invariant: it is logged with its stack, but the client still gets the truth.
 */
export async function settleAfterCall<T extends { response: StoredResponse }>(
  orderId: string,
  record: () => Promise<T>,
  log: (line: string) => void = defaultLog,
): Promise<T | { response: StoredResponse }> {
  try {
    return await record();
  } catch (error) {
    log(
      `pay ${orderId}: the provider was called but its answer could not be recorded (${describe(error)}); answered UNKNOWN`,
    );
    return { response: jsonResponse(200, { order_id: orderId, status: 'UNKNOWN' }) };
  }
}

/**
 * Work after the answer is recorded (a refund send) that recovery redoes if it fails here. The
 * client's answer is committed with its key by then: a failure here must not turn it into a 500
 * that a retry would contradict by replaying the committed answer.
 */
export async function bestEffort(
  what: string,
  work: () => Promise<unknown>,
  log: (line: string) => void = defaultLog,
): Promise<void> {
  try {
    await work();
  } catch (error) {
    log(`${what} deferred to recovery: ${describe(error)}`);
  }
}

/** A fault in one line; anything else (a bug, a refused statement) with its stack and SQLSTATE. */
function describe(error: unknown): string {
  const e = error as Error & { code?: string };
  if (isDatabaseFault(error)) return e.message;
  return `${e.code ? `${e.code} ` : ''}${e.stack ?? String(error)}`;
}

function defaultLog(line: string): void {
  process.stderr.write(`flashpay: ${line}\n`);
}
