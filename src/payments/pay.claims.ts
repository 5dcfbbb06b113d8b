import { GROUP_STALL_MS, groupCollector, MemberFailed } from '../platform/group-commit.ts';
import { inTx, type Tx } from '../platform/db.ts';
import type { Principal } from '../platform/auth.ts';
import {
  claimKeyAlone,
  claimKeysIn,
  type KeyClaim,
  type KeyedDeps,
  type KeyedOperation,
  type KeyedStep,
} from '../idempotency/index.ts';
import { oncePerOrder } from './pay.group.ts';
import { beginPays } from './pay.service.ts';
import type { PaymentDeps } from './payments.deps.ts';

// Group commit of the pays' first transactions (the key's claim and CREATED → PAYING), as
// pay.group.ts groups their last: pays that start while another group is committing share one
// transaction, set-based (their keys inserted in one statement, their transitions applied by
// applyOrderEvents), and one durable commit, each with its own key row and its own transition.
// The group commits before any of its members calls the provider: "we may have charged" is on
// disk first, as alone. No transaction is open during a provider call.

export interface Pay {
  principal: Principal;
  orderId: string;
  /** The buyer's payment method at a real provider (the pay body's `payment_method`). */
  paymentMethod?: string;
}

export interface PayClaims {
  /** Claims the pay's key and starts it, in a transaction shared with concurrent pays. */
  claim(pay: Pay, op: KeyedOperation): Promise<KeyClaim>;
}

interface Member {
  pay: Pay;
  op: KeyedOperation;
  resolve(value: KeyClaim): void;
  reject(error: unknown): void;
}

export interface ClaimGroupOptions {
  /** How long arriving pays wait behind the committing group before one goes beside it (GROUP_STALL_MS). */
  windowMs?: number;
  max?: number;
}

/** Starts the pays that own their key, in the group's transaction: their steps, in the order given. */
export type StartPays = (tx: Tx, pays: readonly Pay[]) => Promise<KeyedStep[]>;

/**
 * A pay that finds no group committing claims at once (no added wait when idle); otherwise the
 * pays that arrive collect, and go as one group when that group ends, after `windowMs`, or at `max`.
 */
export function groupPayClaims(deps: KeyedDeps, payments: PaymentDeps, options: ClaimGroupOptions = {}): PayClaims {
  return groupClaims(deps, (tx, pays) => beginPays(payments, tx, pays), options);
}

/**
 * groupPayClaims for any kind of pay: `startMany` starts a group's pays set-based (beginPays,
 * beginWalletPays); a pay whose group fails claims alone, with its operation's own `start`. A
 * group holds one pay per order (oncePerOrder): a second pay of an order waits for the next.
 */
export function groupClaims(deps: KeyedDeps, startMany: StartPays, options: ClaimGroupOptions = {}): PayClaims {
  const windowMs = options.windowMs ?? GROUP_STALL_MS;
  const max = options.max ?? 32;
  const exclusive = oncePerOrder<Member>(
    (m) => m.pay.orderId,
    (group) => commitGroup(deps, startMany, group),
  );
  const collector = groupCollector<Member>({ windowMs, max, concurrent: 1, take: exclusive.take }, exclusive.commit);
  return {
    claim(pay, op) {
      return new Promise<KeyClaim>((resolve, reject) => collector.add({ pay, op, resolve, reject }));
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

async function commitGroup(deps: KeyedDeps, startMany: StartPays, group: Member[]): Promise<void> {
  // A group of one takes this path too: pipelined, with its reads sent together (fewer round trips than alone).
  let claims: KeyClaim[];
  try {
    claims = await inTx(
      deps.db,
      async (tx) => {
        try {
          const ops = group.map((m) => m.op);
          return await claimKeysIn(tx, deps, ops, (tx, owned) =>
            startMany(
              tx,
              owned.map((op) => group[ops.indexOf(op)]!.pay),
            ),
          );
        } catch (error) {
          throw new MemberFailed(error);
        }
      },
      // Pipelined: BEGIN leaves with the keys' INSERT.
      { lockTimeoutMs: deps.waitMs, retries: 0, pipeline: true },
    );
  } catch (error) {
    // One pay's refusal (an order not found, a reused key, a wallet too low) or a lock timeout
    // rolled the group back: each claims alone and meets its own outcome.
    if (error instanceof MemberFailed) return void (await Promise.all(group.map((m) => alone(deps, m))));
    // No connection, or the COMMIT's outcome unknown: what each would have met alone.
    for (const member of group) member.reject(error);
    return;
  }
  group.forEach((member, i) => member.resolve(claims[i]!));
}
