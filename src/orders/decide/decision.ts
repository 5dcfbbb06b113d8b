// Building blocks of a decision, shared by decider.ts and the rows it delegates to (queued.ts,
// compensation.ts). A leaf: it imports only the vocabulary, so the decider's files form no circle.
import { EVENT_STATUSES } from './states.ts';
import type { Decision, Hold, Outcome, StockMove } from './types.ts';

export function decision(outcome: Outcome, extra: Partial<Decision> = {}): Decision {
  const to = extra.to;
  return { outcome, stock: [], calls: [], emits: to && EVENT_STATUSES.has(to) ? [`ORDER_${to}`] : [], ...extra };
}

export const nothing = (outcome: Outcome, extra: Omit<Partial<Decision>, 'to'> = {}) => decision(outcome, extra);

export const releaseHeld = (holds: readonly Hold[]): StockMove[] =>
  holds.filter((h) => h.status === 'HELD').map((h) => ({ op: 'release', key: h.key }));

/** The hold can no longer be paid for: released, confirmed elsewhere, missing, or past its expiry. */
export function holdIsGone(holds: readonly Hold[], now: Date): boolean {
  return holds.some((h) => h.status !== 'HELD' || (h.expiresAt !== null && h.expiresAt <= now));
}
