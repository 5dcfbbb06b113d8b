import { describe, expect, it } from 'vitest';
import { GROUP_STALL_MS, groupCollector } from '../../src/platform/group-commit.ts';
import { oncePerOrder } from '../../src/payments/pay.group.ts';

// The group collector's scheduling (src/platform/group-commit.ts) with the pays' take
// (src/payments/pay.group.ts oncePerOrder): groups overlap (several commit at once, a timer sends
// the next while one commits), and yet no two committing groups ever hold the same order, every
// member commits exactly once, and each order's members commit in arrival order. The commits here
// are timers, not transactions: what is under test is who goes with whom and when.

interface Member {
  seq: number;
  item: { orderId: string };
}

/** A fixed pseudo-random sequence (the schedule is the same on every run). */
function prng(seed: number) {
  let x = seed >>> 0;
  return () => (x = (Math.imul(x ^ (x >>> 15), 2246822507) + 0x9e3779b9) >>> 0) / 2 ** 32;
}

type Commit = (group: Member[]) => Promise<void>;
type Take = (waiting: Member[]) => [Member[], Member[]];

async function run(schedule: (commit: Commit) => { take: Take; commit: Commit }) {
  const random = prng(16);
  const committing = new Map<string, number>(); // order → groups holding it now
  let overlaps = 0;
  let groups = 0;
  const committed: Member[] = [];
  const { take, commit } = schedule(async (group) => {
    groups++;
    for (const m of group) {
      const n = committing.get(m.item.orderId) ?? 0;
      if (n > 0) overlaps++;
      committing.set(m.item.orderId, n + 1);
    }
    await new Promise((resolve) => setTimeout(resolve, 1 + random() * 4));
    for (const m of group) committing.set(m.item.orderId, committing.get(m.item.orderId)! - 1);
    committed.push(...group);
  });
  const collector = groupCollector<Member>({ windowMs: 1, max: 6, concurrent: 3, take }, commit);
  // 240 members over 24 orders, arriving in bursts (a pay's answer and its notification together).
  const members: Member[] = Array.from({ length: 240 }, (_, seq) => ({
    seq,
    item: { orderId: `o${Math.floor(random() * 24)}` },
  }));
  for (let i = 0; i < members.length;) {
    const burst = 1 + Math.floor(random() * 8);
    for (const m of members.slice(i, i + burst)) collector.add(m);
    i += burst;
    await new Promise((resolve) => setTimeout(resolve, random() * 2));
  }
  while (committed.length < members.length) await new Promise((resolve) => setTimeout(resolve, 5));
  await new Promise((resolve) => setTimeout(resolve, 20));
  return { overlaps, groups, committed };
}

describe('group commit: a group never takes an order a committing group holds', () => {
  it('GC-01 overlapping groups, 240 members over 24 orders: no order in two committing groups, each member once, per-order arrival order kept', async () => {
    const { overlaps, groups, committed } = await run((commit) => oncePerOrder<Member>((m) => m.item.orderId, commit));
    expect(overlaps).toBe(0);
    expect(groups).toBeLessThan(240); // members did share groups
    expect(committed.map((m) => m.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 240 }, (_, i) => i));
    const perOrder = new Map<string, number[]>();
    for (const m of committed) perOrder.set(m.item.orderId, [...(perOrder.get(m.item.orderId) ?? []), m.seq]);
    for (const seqs of perOrder.values()) expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  });

  it('GC-02 negative control: a take that only keeps one event per order within a group lets committing groups share orders', async () => {
    // The take before this change: the schedule above then puts one order in two committing groups,
    // which in PostgreSQL is the second group waiting on the first's row lock while holding its own.
    const withinGroupOnly = (waiting: Member[]): [Member[], Member[]] => {
      const seen = new Set<string>();
      const group: Member[] = [];
      const later: Member[] = [];
      for (const m of waiting) (seen.has(m.item.orderId) ? later : (seen.add(m.item.orderId), group)).push(m);
      return [group, later];
    };
    const { overlaps, committed } = await run((commit) => ({ take: withinGroupOnly, commit }));
    expect(committed).toHaveLength(240);
    expect(overlaps).toBeGreaterThan(0);
  });
});

describe('group commit: members wait for the committing group, the window only bounds a stall', () => {
  const later = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  /** A collector whose commits end when the test says so. */
  function controlled(windowMs: number) {
    const started: number[][] = [];
    const ends: Array<() => void> = [];
    const collector = groupCollector<number>({ windowMs, max: 32, concurrent: 1 }, (group) => {
      started.push(group);
      return new Promise<void>((resolve) => ends.push(resolve));
    });
    return { collector, started, end: (i: number) => ends[i]!() };
  }

  it('GC-03 pays that arrive while a group commits go together when it ends, not beside it every few milliseconds', async () => {
    const { collector, started, end } = controlled(GROUP_STALL_MS);
    collector.add(1); // idle: goes at once
    expect(started).toEqual([[1]]);
    for (let m = 2; m <= 6; m++) collector.add(m);
    // Past the old 2 ms window, within GROUP_STALL_MS (timers fire in expiry order, however late the
    // loop is): nothing went beside group 1.
    await later(5);
    expect(started).toEqual([[1]]);
    end(0);
    await later(0);
    expect(started).toEqual([[1], [2, 3, 4, 5, 6]]);
  });

  it('GC-04 a group that stalls past GROUP_STALL_MS (a lock wait) does not hold the pays behind it longer', async () => {
    const { collector, started, end } = controlled(GROUP_STALL_MS);
    collector.add(1);
    collector.add(2);
    await later(GROUP_STALL_MS + 15);
    expect(started).toEqual([[1], [2]]); // 2 went beside the stalled group 1
    end(0);
    end(1);
  });

  it('GC-05 negative control: with the old 2 ms window the same arrivals went as groups beside the committing one', async () => {
    const { collector, started } = controlled(2);
    collector.add(1);
    for (let m = 2; m <= 6; m++) {
      collector.add(m);
      await later(4);
    }
    expect(started.length).toBeGreaterThan(2);
  });
});
