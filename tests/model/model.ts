// The model of one run: what a client was told, order by order. It is deliberately simple — the
// real system decides races and faults; the model only remembers answers that bind it (a PAID
// answer must stand, a cancel that said CANCELLED must stand, a decline must leave no charge),
// and invariants.ts checks everything else against the database and the provider's ledger.
import type { Scheduler } from 'fast-check';
import type { World } from './world.ts';

export interface OrderModel {
  id: string;
  user: string;
  amount: number;
  /** Created with no later cancel, expiry, pay or crash touching it: its next plain pay must be PAID. */
  fresh: boolean;
  paid: boolean;
  declined: boolean;
  cancelled: boolean;
}

export interface Model {
  orders: OrderModel[];
}

/** One run's slice of the shared world: its own tenant, SKUs and buyers. */
export interface Run {
  world: World;
  scheduler: Scheduler;
  tenant: string;
  skus: { a: string; b: string };
  holdTtlMs: number;
  users: string[];
  /** A deliberately broken step, swapped in by the negative control only. */
  broken?: BrokenSteps;
  next(prefix: string): string;
  buyer(user: string): Promise<string>;
  admin(): Promise<string>;
}

export interface BrokenSteps {
  cancel?(run: Run, order: OrderModel): Promise<{ status: number; orderStatus?: string }>;
}

export const PRICE_A = 700;
export const PRICE_B = 300;

let runs = 0;

export async function newRun(
  world: World,
  scheduler: Scheduler,
  shape: { stockA: number; stockB: number; limit: number },
  broken?: BrokenSteps,
): Promise<Run> {
  const id = `${process.pid}-${++runs}`;
  const tenant = `m-${id}`;
  const tokens = new Map<string, Promise<string>>();
  let seq = 0;
  const run: Run = {
    world,
    scheduler,
    tenant,
    skus: { a: 'hot', b: 'side' },
    holdTtlMs: 60_000,
    users: ['u0', 'u1', 'u2'],
    broken,
    next: (prefix) => `${prefix}-${id}-${++seq}`,
    buyer(user) {
      if (!tokens.has(user)) tokens.set(user, world.token(tenant, user));
      return tokens.get(user) as Promise<string>;
    },
    admin: () => world.token(tenant, 'ops', 'admin'),
  };
  const admin = await world.token(tenant, 'ops', 'admin');
  for (const [sku, price, stock, limit] of [
    [run.skus.a, PRICE_A, shape.stockA, shape.limit],
    [run.skus.b, PRICE_B, shape.stockB, null],
  ] as const) {
    const created = await world.call('POST', '/v1/admin/skus', {
      token: admin,
      body: { sku, name: `SKU ${sku}`, price, stock, per_user_limit: limit, hold_ttl_ms: run.holdTtlMs },
    });
    if (created.status !== 201) throw new Error(`SKU setup: ${created.status} ${created.text}`);
  }
  return run;
}
