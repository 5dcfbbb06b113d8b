import { inTx } from '../platform/db.ts';
import { claimKeyAlone, claimKeyIn, type KeyClaim, type KeyedDeps, type KeyedOperation } from '../idempotency/index.ts';

// Group commit of the pays' first transactions (the key's claim and CREATED → PAYING), as
// pay.group.ts groups their last: pays that start while another group is committing share one
// transaction and one durable commit, each with its own key row and its own transition. The group
// commits before any of its members calls the provider: "we may have charged" is on disk first,
// as alone. No transaction is open during a provider call.

export interface PayClaims {
  /** Claims the pay's key and starts it in a transaction shared with concurrent pays. */
  claim(orderId: string, op: KeyedOperation): Promise<KeyClaim>;
}

interface Member {
  orderId: string;
  op: KeyedOperation;
  resolve(value: KeyClaim): void;
  reject(error: unknown): void;
}

class MemberFailed extends Error {
  constructor(cause: unknown) {
    super('a claim of the group failed', { cause });
  }
}

export interface ClaimGroupOptions {
  windowMs?: number;
  max?: number;
}

/**
 * A pay that finds no group committing claims at once (no added wait when idle); otherwise the
 * pays that arrive collect, and go as one group when that group ends, after `windowMs`, or at `max`.
 */
export function groupPayClaims(deps: KeyedDeps, options: ClaimGroupOptions = {}): PayClaims {
  const windowMs = options.windowMs ?? 2;
  const max = options.max ?? 32;
  let waiting: Member[] = [];
  let timer: NodeJS.Timeout | undefined;
  let committing = false;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    const group = waiting;
    waiting = [];
    committing = true;
    void commitGroup(deps, group).finally(() => {
      committing = false;
      if (waiting.length > 0) flush();
    });
  };
  return {
    claim(orderId, op) {
      return new Promise<KeyClaim>((resolve, reject) => {
        waiting.push({ orderId, op, resolve, reject });
        if (!committing || waiting.length >= max) flush();
        else timer ??= setTimeout(flush, windowMs);
      });
    },
  };
}

async function alone(deps: KeyedDeps, { op, resolve, reject }: Member): Promise<void> {
  try {
    resolve(await claimKeyAlone(deps, op));
  } catch (error) {
    reject(error);
  }
}

async function commitGroup(deps: KeyedDeps, group: Member[]): Promise<void> {
  if (group.length === 1) return alone(deps, group[0]!);
  // Orders locked in id order, as the pays' last commits lock them (pay.group.ts): no deadlock.
  const ordered = [...group].sort((a, b) => (a.orderId < b.orderId ? -1 : a.orderId > b.orderId ? 1 : 0));
  let claims: KeyClaim[];
  try {
    claims = await inTx(
      deps.db,
      async (tx) => {
        try {
          const out: KeyClaim[] = [];
          for (const m of ordered) out.push(await claimKeyIn(tx, deps, m.op));
          return out;
        } catch (error) {
          throw new MemberFailed(error);
        }
      },
      { lockTimeoutMs: deps.waitMs, retries: 0 },
    );
  } catch (error) {
    // One pay's refusal (an order not found, a reused key) or a lock timeout rolled the group
    // back: each claims alone and meets its own outcome.
    if (error instanceof MemberFailed) return void (await Promise.all(group.map((m) => alone(deps, m))));
    // No connection, or the COMMIT's outcome unknown: what each would have met alone.
    for (const member of group) member.reject(error);
    return;
  }
  ordered.forEach((member, i) => member.resolve(claims[i]!));
}
