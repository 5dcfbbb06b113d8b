import { drawBetween, mulberry32 } from '../channel/index.ts';

// The faults of seed 000's C29-13, assigned to orders by a seeded generator.
// Seed 002 adds two after PAID: `refuse` (the fulfilment refused for good: compensated) and
// `refundfail` (refused, and the compensating refund fails twice first: COMPENSATION_PENDING, then recovered).
export const FAULTS = ['normal', 'decline', 'lost', 'linger', 'nopay', 'expire', 'refuse', 'refundfail'] as const;
export type Fault = (typeof FAULTS)[number];

export interface SimShape {
  orders: number;
  stock: number;
  lateBuyers: number;
  /** How many orders get each fault; the rest are normal. */
  mix: Record<Exclude<Fault, 'normal'>, number>;
  /** Of the `expire` orders, how many see their first refund reply time out. */
  refundTimeouts: number;
  concurrency: number;
  /** Lines per order (seed 004): the sale's SKU plus lines-1 companion SKUs with stock to spare. */
  lines?: number;
  /** Share (0..1) of the normal buyers who pay from a seeded wallet; a quarter of those wallets are too low. */
  walletShare?: number;
  /** `--async`: every order is placed with `Prefer: respond-async` and waited for (seed 004's queued path). */
  queued?: boolean;
}

/** Seed 000's shape: 24 units, 24 orders (3 declined, 4 lost replies, 3 lingering, 3 never paid, 6 expired while UNKNOWN, 2 of them with a lost first refund), 12 late buyers. */
export const SEED_SHAPE: SimShape = {
  orders: 24,
  stock: 24,
  lateBuyers: 12,
  mix: { decline: 3, lost: 4, linger: 3, nopay: 3, expire: 6, refuse: 0, refundfail: 0 },
  refundTimeouts: 2,
  concurrency: 8,
};

export interface PlannedOrder {
  index: number;
  fault: Fault;
  /** Delay of a lost reply or a lingering request, 400–1500 ms as in the seed. */
  delayMs: number;
  refundTimeout: boolean;
  /** Copies of each of its notifications delivered, 1–3. */
  copies: number;
  /** Pays from the wallet, seeded with enough or one minor unit too little (then pays by channel). */
  wallet?: 'ENOUGH' | 'SHORT';
}

export interface SimPlan {
  seed: number;
  orders: PlannedOrder[];
  /** The order in which held notifications are released (indexes into `orders`). */
  releaseOrder: number[];
  /** Pause before each release, 0–300 ms. */
  releaseDelaysMs: number[];
}

function shuffle<T>(items: T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

/** The same seed and shape give the same plan, whatever the machine does with the timing. */
export function planSim(seed: number, shape: SimShape): SimPlan {
  const faulted = Object.values(shape.mix).reduce((sum, n) => sum + n, 0);
  if (faulted > shape.orders)
    throw new Error(`the fault mix names ${faulted} orders, more than --orders ${shape.orders}`);
  if (shape.refundTimeouts > shape.mix.expire) throw new Error('refund timeouts are a subset of expired orders');
  const random = mulberry32(seed);
  const faults: Fault[] = [];
  for (const [fault, n] of Object.entries(shape.mix) as Array<[Fault, number]>)
    for (let i = 0; i < n; i++) faults.push(fault);
  while (faults.length < shape.orders) faults.push('normal');
  let refundTimeouts = shape.refundTimeouts;
  const orders = shuffle(faults, random).map((fault, index) => {
    const refundTimeout = fault === 'expire' && refundTimeouts > 0;
    if (refundTimeout) refundTimeouts--;
    return { index, fault, delayMs: drawBetween(random, 400, 1500), refundTimeout, copies: drawBetween(random, 1, 3) };
  });
  const releaseOrder = shuffle(
    orders.map((o) => o.index),
    random,
  );
  const plan = { seed, orders, releaseOrder, releaseDelaysMs: releaseOrder.map(() => drawBetween(random, 0, 300)) };
  return shape.walletShare ? withWallets(plan, shape.walletShare) : plan;
}

// A generator of its own, so adding wallets never changes the fault plan of a seed.
const WALLET_STREAM = 0x5eed004;
const SHORT_SHARE = 0.25;

/** Marks a share of the normal orders as wallet-paid; only normal ones, since every other fault is the provider's. */
function withWallets(plan: SimPlan, share: number): SimPlan {
  const random = mulberry32(plan.seed ^ WALLET_STREAM);
  const orders = plan.orders.map((o): PlannedOrder => {
    const draw = random();
    const short = random() < SHORT_SHARE;
    return o.fault === 'normal' && draw < share ? { ...o, wallet: short ? 'SHORT' : 'ENOUGH' } : o;
  });
  return { ...plan, orders };
}

export function parseMix(text: string, base: SimShape['mix']): SimShape['mix'] {
  const mix = { ...base };
  for (const part of text.split(',').filter(Boolean)) {
    const [name, value] = part.split('=');
    const n = Number(value);
    if (!name || !(name in mix) || !Number.isInteger(n) || n < 0)
      throw new Error(`--mix takes name=count pairs of ${Object.keys(mix).join(', ')}; got "${part}"`);
    mix[name as keyof typeof mix] = n;
  }
  return mix;
}
