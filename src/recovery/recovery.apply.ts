import { inTx } from '../platform/db.ts';
import { applyOrderEvents, type AppliedEvent } from '../orders/index.ts';
import { recordAnswer, type Answer, type PaymentDeps } from '../payments/index.ts';

// Recovery's answers arrive many at a time (thousands of UNKNOWN orders after an outage): they
// are applied as a group, one transaction and one durable commit for every answer that arrived
// while the previous group was committing or while the group lingered, instead of one
// transaction per order.

/** Answers one group applies at most: bounds the locks one transaction holds. */
export const ANSWER_GROUP_MAX = 64;
/**
 * Groups being applied at once. One: the next group fills while one commits, and groups of one SKU
 * would only queue on its row anyway (measured: two writers were no faster on the bench's one SKU;
 * measured again once a group wrote the SKU row once, not once per release: still no faster).
 */
const ANSWER_WRITERS = 1;
/**
 * How long a group that is not full waits for more answers before it goes. Recovery is bound by
 * the provider, not by how soon an answer is written: a provider slot is free once its call has
 * returned, and an order's close waits for nothing but its query's group. Without the wait, groups
 * averaged 11 answers on P6; waits of 20–40 ms more than doubled them, halved PostgreSQL's CPU and
 * slowed the provider's calls less (docs/benchmarks/journal.md §21).
 */
export const ANSWER_LINGER_MS = 30;

interface Waiting {
  orderId: string;
  answer: Answer;
  resolve: (applied: AppliedEvent) => void;
  reject: (error: unknown) => void;
}

const byOrderId = (a: Waiting, b: Waiting) => (a.orderId < b.orderId ? -1 : a.orderId > b.orderId ? 1 : 0);

/**
 * Applies a group in one transaction (applyOrderEvents): every order locked first, in id order (so
 * two groups, or a group and a pay request, never wait on each other in a cycle: a pay locks one
 * order, then its stock), then each answer through the decider as recordAnswer would. A group that fails is
 * applied order by order, each in its own transaction, so one bad order holds back no other.
 */
async function applyGroup(deps: PaymentDeps, group: Waiting[]): Promise<void> {
  group.sort(byOrderId);
  let applied: AppliedEvent[];
  try {
    // Pipelined: BEGIN and the group's locking reads leave in one write, its writes together.
    applied = await inTx(
      deps.db,
      (tx) =>
        applyOrderEvents(
          tx,
          group.map((w) => ({ orderId: w.orderId, event: w.answer })),
          deps.clock.now(),
        ),
      { pipeline: true },
    );
  } catch {
    for (const w of group) await recordAnswer(deps, w.orderId, w.answer).then(w.resolve, w.reject);
    return;
  }
  group.forEach((w, i) => w.resolve(applied[i] as AppliedEvent));
}

/** Group commit for provider answers: `apply` resolves once the answer's group has committed. */
export function answerApplier(
  deps: PaymentDeps,
  lingerMs = ANSWER_LINGER_MS,
): { apply(orderId: string, answer: Answer): Promise<AppliedEvent> } {
  const queue: Waiting[] = [];
  let writers = 0;
  // Set while a group lingers: a full group ends the wait.
  let full: (() => void) | undefined;
  const linger = () =>
    new Promise<void>((resolve) => {
      const go = () => {
        clearTimeout(timer);
        full = undefined;
        resolve();
      };
      const timer = setTimeout(go, lingerMs);
      full = go;
    });
  // applyGroup settles every answer it takes (resolve or reject) and does not throw itself.
  const flush = async () => {
    writers++;
    try {
      while (queue.length > 0) {
        if (lingerMs > 0 && queue.length < ANSWER_GROUP_MAX) await linger();
        await applyGroup(deps, queue.splice(0, ANSWER_GROUP_MAX));
      }
    } finally {
      writers--;
    }
  };
  return {
    apply(orderId, answer) {
      return new Promise<AppliedEvent>((resolve, reject) => {
        queue.push({ orderId, answer, resolve, reject });
        if (queue.length >= ANSWER_GROUP_MAX) full?.();
        if (writers < ANSWER_WRITERS) void flush();
      });
    },
  };
}
