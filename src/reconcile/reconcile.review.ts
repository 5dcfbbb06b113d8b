import type { Db } from '../platform/db.ts';
import { systemClock } from '../platform/clock.ts';
import { noteForPerson } from '../orders/index.ts';
import { answerEvent, recordAnswer, type ChannelClient } from '../payments/index.ts';
import type { ReconciliationReport } from './reconcile.report.ts';
import type { MismatchClass } from './reconcile.rules.ts';

// REVIEW (issue 37): a real provider can contradict itself. Its statement says an order's money
// went back (a refund made in its dashboard, a chargeback), while its query still says the payment
// succeeded — or the other way round. flashpay believes neither over the other: when the statement
// disagrees with an order, the provider is asked about that order once; if its answer agrees with
// the order, the two answers contradict each other and a person decides. The order gets a note in
// the needs-a-person list and the mismatch stays in the report; nothing is moved automatically.
//
// Issue 48: when the two witnesses agree with each other against the order — the statement has a
// REFUND for an order flashpay still has PAID, and the query says REFUNDED too (a refund made in
// the provider's dashboard whose notification never came) — the provider already did it: its
// answer goes through the decider like any query's, the order converges to REFUNDED (its units as
// an operator refund's, no refund call), once: a guarded transition, and the next pass finds it
// clean. This pass's report still lists the mismatch it found.

/** The classes where the statement and the order disagree about money: the query is a second witness. */
const MONEY_CLASSES = new Set<MismatchClass>([
  'PAID_BUT_REFUNDED',
  'PAID_WITHOUT_CHARGE',
  'PAID_AMOUNT_MISMATCH',
  'REFUNDED_LEDGER_MISMATCH',
  'CHARGED_BUT_FAILED',
  'CHARGED_BUT_CANCELLED',
]);

/** Provider queries one pass makes at most: a statement gone wrong wholesale is one finding, not a flood of calls. */
const MAX_QUERIES_PER_PASS = 50;

const REVIEW_PREFIX = 'REVIEW';

/** Whether the provider's query answer says what the order says. */
function queryAgreesWithOrder(orderStatus: string, queried: string): boolean {
  if (orderStatus === 'PAID') return queried === 'CHARGED';
  if (orderStatus === 'REFUNDED') return queried === 'REFUNDED';
  if (orderStatus === 'FAILED' || orderStatus === 'CANCELLED')
    return queried === 'CLOSED' || queried === 'DECLINED' || queried === 'NOT_FOUND';
  return false;
}

export async function reviewContradictions(
  db: Db,
  channel: ChannelClient,
  report: ReconciliationReport,
): Promise<ReconciliationReport> {
  const suspects = report.mismatches.filter((m) => m.status !== null && MONEY_CLASSES.has(m.class));
  const review: NonNullable<ReconciliationReport['review']> = [];
  for (const m of suspects.slice(0, MAX_QUERIES_PER_PASS)) {
    const reply = await channel.query(m.order_id);
    // A query we did not get an answer to proves nothing either way: the mismatch stands alone.
    if (reply.kind !== 'STATUS') continue;
    if (m.class === 'PAID_BUT_REFUNDED' && m.status === 'PAID' && reply.status === 'REFUNDED') {
      const cause = 'reconciliation: the provider’s statement and its query say refunded';
      await recordAnswer({ db, clock: systemClock }, m.order_id, answerEvent('query', 'REFUNDED', cause, reply.amount));
      continue;
    }
    if (!queryAgreesWithOrder(m.status!, reply.status)) continue;
    const detail = `the provider's query says ${reply.status}, its statement says otherwise (${m.class}: ${m.detail})`;
    await noteForPerson(db, m.order_id, `${REVIEW_PREFIX}: ${detail}`);
    review.push({ order_id: m.order_id, class: m.class, query: reply.status, detail });
  }
  return review.length > 0 ? { ...report, review } : report;
}
