// The one registry of mutation switches (issue 55): each removes exactly one guard of the real
// code, so a negative control can run the real flow without it and show the damage the guard
// stops (STYLE 23: a guard is proven by removing it). Beside faultpoints.ts, with one difference
// on purpose: a fault point can be armed across processes by FLASHPAY_FAULTPOINT, a mutation
// cannot. It is armed only by a test calling armMutation() in its own process (the suite runs its
// servers in-process), never by an environment variable, a flag, a file or any configuration a
// deployment could set by accident; no file under src/ calls armMutation (MU-00 checks it).
// Unarmed, a guard site costs one size check of an empty Map.

/** Guards that can be switched off, each named `<module>.<where>.<guard>`. */
export const MUTATIONS = [
  // The order's row lock (lockOrder / lockOrders): without it, events are decided on a stale status.
  'orders.lock',
  // The conditional UPDATE of the transition function: `WHERE status = <prior status>`.
  'orders.transition.prior-status',
  // Recovery's bookkeeping is fenced by its claim (finishAttempts): a claim taken over is not the old owner's to write.
  'orders.recovery.claim-fence',
  // A sold-out wave refuses only buyers who want more than the `available` it reads; the mark only routes (CB-05; subject: the SKU).
  'orders.create.sold-out-read',
  // A queued group checks the names and prices it remembers against the SKU rows before writing (QA-04).
  'orders.queued.stale-terms',
  // A refund of a FULFILLED order keeps its shipped units out of stock (unitsAfterRefund, issue 48, SH-01).
  'orders.refund.keep-shipped',
  // The decider keeps a lost charge reply UNKNOWN (unit HELD), never FAILED (C29-14).
  'orders.decide.lost-is-unknown',
  // The decider answers a query's NOT_FOUND with a close, never with FAILED (C29-15).
  'orders.decide.not-found-closes',
  // The decider writes PAID only with every unit confirmed: a lost one re-reserved, else refunded (C29-17).
  'orders.decide.paid-needs-units',
  // A key's unique row decides who owns it: a request whose key is taken neither claims it (tryInsertKey)
  // nor, on the final-only path, runs past its lookup or commits past the primary key (idempotency.once.ts).
  'idempotency.key.unique',
  // A pay group that failed on one member's statement runs every member alone (pay.group.ts): one pay's failure is not the others'.
  'payments.group.members-alone',
  // A notification not the order's to settle is refused, per kind (subject: WRONG_PROVIDER, CURRENCY_MISMATCH, PAYMENT_ID_IN_USE).
  'payments.notification.refusal',
  // Every refund of an order goes with its one fixed key, `rf-<order>`.
  'payments.refund.fixed-key',
  // A notification is deduplicated per (provider, notify_id), not by notify_id alone (issue 48, MF-05).
  'payments.notification.per-provider',
] as const;
/** A named guard, or one reconciliation rule: `reconcile.rule.<mismatch class>`. */
export type MutationName = (typeof MUTATIONS)[number] | `reconcile.rule.${string}`;

/** Armed guards; `only` limits one to the subjects a test names (the order, SKU or refusal its guard site passes), so cases running side by side are not touched. */
const armed = new Map<string, { only: ReadonlySet<string> | undefined }>();

/** Removes the guard `name` in this process (for `only`'s subjects, else for all) until the returned disarm is called. Tests only. */
export function armMutation(name: MutationName, only?: readonly string[]): () => void {
  const entry = { only: only ? new Set(only) : undefined };
  armed.set(name, entry);
  return () => {
    if (armed.get(name) === entry) armed.delete(name);
  };
}

/** True while a test has removed the guard `name` (for `subject`): read at the guard, which then does nothing. */
export function mutant(name: MutationName, subject?: string): boolean {
  if (armed.size === 0) return false;
  const entry = armed.get(name);
  if (!entry) return false;
  return entry.only === undefined || (subject !== undefined && entry.only.has(subject));
}
