// F-02's load and checks, shared by the server it starts itself (F-02) and the CI machine's own
// PostgreSQL restarted by its service command (F-02b). Not a test file.
import { exec } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import { answersGrow, startLoad } from './load.ts';
import { waitFor } from '../support/poll.ts';
import { answeredMatchDatabase, convergeClean, FAULT_TENANT, simConverges, type FaultStack } from './support.ts';

/**
 * The process both cases run. A pay whose answer was lost with the server stays PAYING until
 * recovery finds it stale: after 2 s here (the background loop and convergeClean's own runs), not
 * the default minute.
 */
export const RESTART_STACK_ENV = {
  FLASHPAY_POOL_SIZE: '8',
  FLASHPAY_RECOVERY_INTERVAL_MS: '500',
  FLASHPAY_STALE_AFTER_MS: '2000',
};

export interface ServerFault {
  /** Takes the server away: stops it (F-02), or restarts it in one command (F-02b). */
  interrupt(): Promise<void>;
  /** Brings it back if `interrupt` left it down. */
  restore(): Promise<void>;
  /** The server stays away between the two, long enough to probe: a quick 503 and a red /readyz. */
  awayBetween: boolean;
}

/** While the server is away: a new order is answered 503 UNAVAILABLE with Retry-After, quickly, and /readyz is red. */
async function expectAwayAnswers(s: FaultStack): Promise<void> {
  const buyer = await s.signer.sign({ tenantId: FAULT_TENANT, userId: 'while-away', scope: 'buyer' });
  const started = Date.now();
  const away = await fetch(`${s.proc.api}/v1/orders`, {
    method: 'POST',
    headers: { authorization: `Bearer ${buyer}`, 'idempotency-key': 'away-1', 'content-type': 'application/json' },
    body: '{"sku":"hot"}',
  });
  expect(Date.now() - started).toBeLessThan(6_000);
  expect([away.status, away.headers.get('retry-after'), ((await away.json()) as { code: string }).code]).toEqual([
    503,
    '1',
    'UNAVAILABLE',
  ]);
  expect((await fetch(`${s.proc.api}/readyz`)).status).toBe(503);
}

/**
 * Under a steady load of creates and pays, the server goes away and comes back: the process stays
 * alive, answers grow again by themselves, no request hung past its deadline, every answered order
 * is in the database as answered, reconciliation is clean, and a seeded sale still converges.
 */
export async function serverRestartUnderLoad(s: FaultStack, fault: ServerFault): Promise<void> {
  expect(
    (await s.adminCall('POST', '/v1/admin/skus', { sku: 'hot', name: 'Hot', price: 500, stock: 100_000 })).status,
  ).toBe(201);
  const load = startLoad({
    api: s.proc.api,
    signer: s.signer,
    tenant: FAULT_TENANT,
    sku: 'hot',
    workers: 8,
    deadlineMs: 15_000,
  });
  await answersGrow(load.report, 60, s.alive, undefined, s.proc.stderr);
  try {
    await fault.interrupt();
    if (fault.awayBetween) await expectAwayAnswers(s);
    expect(s.alive()).toBe(true);
  } finally {
    await fault.restore();
  }
  await answersGrow(load.report, 60, s.alive, undefined, s.proc.stderr);
  const report = await load.stop();
  expect((await fetch(`${s.proc.api}/readyz`)).status).toBe(200);
  expect(report.violations).toEqual([]);
  if (fault.awayBetween) {
    expect(report.unavailable).toBeGreaterThan(0);
    // The loops said they were failing, and say when they come back: a loop that failed waits out
    // its backoff first (at most 30 s, src/workers.ts), which may end after the API answers again.
    expect(s.proc.stderr()).toMatch(/failed \(1 in a row, backing off\)/);
    await waitFor(
      async () => /resumed after/.test(s.proc.stderr()),
      'a background loop to log that it resumed',
      40_000,
      100,
    );
  }
  expect(await answeredMatchDatabase(s.db, report.created, report.paid)).toEqual([]);
  expect((await convergeClean(s)).mismatches).toEqual([]);
  // And a seeded sale with every provider fault still converges on the same process.
  const sim = await simConverges(s, 7);
  expect(sim.output).toMatch(/mismatches=0 pending=0/);
  expect(sim.code).toBe(0);
}

/** Runs an operator's shell command (the server's service command), failing with its output. */
export async function runCommand(command: string): Promise<void> {
  await promisify(exec)(command, { timeout: 60_000 });
}
