import { isDatabaseFault } from '../platform/db.ts';
import { jsonResponse, type StoredResponse } from '../idempotency/index.ts';

/**
 * Records what the provider said, once the provider has been called. From that moment a database
 * fault must never be answered "nothing was executed" (503): the money may have moved, and a
 * client that believes it orders again and pays twice. The answer is then the contract's UNKNOWN;
 * the key stays PROCESSING under its lease (a retry with it waits, then takes it over and answers
 * the order's status), and the order, still PAYING, is converged by recovery.
 */
export async function settleAfterCall<T extends { response: StoredResponse }>(
  orderId: string,
  record: () => Promise<T>,
  log: (line: string) => void = defaultLog,
): Promise<T | { response: StoredResponse }> {
  try {
    return await record();
  } catch (error) {
    if (!isDatabaseFault(error)) throw error;
    log(
      `pay ${orderId}: the provider was called but its answer could not be recorded (${(error as Error).message}); answered UNKNOWN`,
    );
    return { response: jsonResponse(200, { order_id: orderId, status: 'UNKNOWN' }) };
  }
}

/** Work after the answer is recorded (a refund send) that recovery redoes if it fails here. */
export async function bestEffort(
  what: string,
  work: () => Promise<unknown>,
  log: (line: string) => void = defaultLog,
): Promise<void> {
  try {
    await work();
  } catch (error) {
    if (!isDatabaseFault(error)) throw error;
    log(`${what} deferred to recovery: ${(error as Error).message}`);
  }
}

function defaultLog(line: string): void {
  process.stderr.write(`flashpay: ${line}\n`);
}
