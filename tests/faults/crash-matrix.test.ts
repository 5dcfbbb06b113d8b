import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { FAULT_POINTS, type FaultPointName } from '../../src/platform/faultpoints.ts';
import { CRASH_SCENARIOS, request, type CrashTarget } from '../support/crash-drivers.ts';
import { invariants } from '../support/crash-invariants.ts';
import { waitForExit } from '../support/process.ts';
import { waitFor } from '../support/poll.ts';
import { adminSql, FAULT_TENANT, startFaultStack, type FaultStack } from './support.ts';

// The crash-point matrix: for every named fault point (src/platform/faultpoints.ts), a real
// `flashpay start` armed at that point is driven there, killed -9 the moment it says "STAGE <name>",
// and restarted on the same database (without the point). Once the restarted process's own loops
// (recovery, relay, saga, stock pump) have converged: reconciliation is clean, the counters are
// conserved and backed by the reservations, nobody is charged twice, each event is applied once,
// and the scenario's orders are in their expected final state (tests/support/crash-drivers.ts).
const ENV = {
  FLASHPAY_PAY_TIMEOUT_MS: '2000', // a loaded 2-core box: no pay here is meant to time out
  FLASHPAY_STALE_AFTER_MS: '3500',
  FLASHPAY_RECOVERY_INTERVAL_MS: '200',
  FLASHPAY_CLAIM_LEASE_MS: '1000',
};

function target(stack: FaultStack): CrashTarget {
  return {
    api: stack.proc.api,
    channel: stack.proc.channel,
    token: (user, scope = 'buyer') => stack.signer.sign({ tenantId: FAULT_TENANT, userId: user, scope }),
    sql: async <T extends Record<string, unknown>>(text: string, params: unknown[] = []) =>
      (await stack.db.pool.query(text, params)).rows as T[],
  };
}

async function crashAt(point: FaultPointName): Promise<void> {
  const scenario = CRASH_SCENARIOS[point];
  const t0 = Date.now();
  const mark = (what: string) =>
    process.env.FLASHPAY_MATRIX_TRACE && console.log(`${point} ${what} +${Date.now() - t0}ms`);
  const doomed = await startFaultStack({ env: { ...ENV, ...scenario.env, FLASHPAY_FAULTPOINT: point } });
  let restarted: FaultStack | undefined;
  try {
    let stdout = '';
    doomed.proc.child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    mark('started');
    const driven = await scenario.drive(target(doomed));
    mark('driven');
    await waitFor(async () => stdout.includes(`STAGE ${point}`), `STAGE ${point}`, 30_000);
    if (doomed.proc.child.pid) process.kill(-doomed.proc.child.pid, 'SIGKILL');
    await waitForExit(doomed.proc.child);
    expect(doomed.proc.child.signalCode).toBe('SIGKILL');
    if (driven.lost) expect(await driven.lost).toBe('no answer');
    // The dead process's claims would lapse in 30 s on their own; the test fast-forwards them.
    await doomed.db.pool.query(
      `UPDATE sagas SET claimed_until = now() - interval '1 second' WHERE claimed_until IS NOT NULL`,
    );
    await doomed.db.pool.query(
      `UPDATE orders SET recovery_claimed_until = now() - interval '1 second' WHERE recovery_claimed_until IS NOT NULL`,
    );
    await doomed.db.pool.query(
      `UPDATE outbox SET claimed_until = now() - interval '1 second' WHERE published_at IS NULL AND claimed_until IS NOT NULL`,
    );

    mark('killed');
    restarted = await startFaultStack({ db: doomed.db, env: ENV });
    mark('restarted');
    const t = target(restarted);
    const admin = restarted.admin;
    const report = await waitFor(
      async () => {
        if (!(await scenario.settled(t, driven))) return undefined;
        const r = await request(t.api, 'GET', '/v1/admin/reconciliation', { token: admin });
        return r.body?.ok === true && r.body.pending === 0 ? r.body : undefined;
      },
      `${point}: converged and reconciled`,
      45_000,
      200,
    ).catch(async (error: Error) => {
      const r = await request(t.api, 'GET', '/v1/admin/reconciliation', { token: admin });
      const rows = await t.sql('SELECT order_id, status FROM orders WHERE order_id = ANY($1)', [driven.orders]);
      throw new Error(
        `${error.message}\n${JSON.stringify(rows)}\n${JSON.stringify(r.body)}\n${restarted?.proc.stderr()}`,
      );
    });
    mark('converged');
    expect(report.mismatches).toEqual([]);
    expect([...(await invariants(t, driven.orders)), ...(await scenario.check(t, driven))]).toEqual([]);
  } finally {
    if (restarted) await restarted.close();
    else await doomed.close();
    if (restarted) {
      await adminSql((c) => c.query(`DROP DATABASE IF EXISTS ${doomed.db.name}_channel WITH (FORCE)`));
      await rm(doomed.dir, { recursive: true, force: true });
    }
  }
}

describe.concurrent('crash-point matrix: every fault point × kill -9 → restart → converge → reconcile clean', () => {
  it('CM-0 every fault point has a scenario (a new point without one fails here)', () => {
    expect(Object.keys(CRASH_SCENARIOS).sort()).toEqual([...FAULT_POINTS].sort());
  });

  for (const point of FAULT_POINTS)
    it(`CM-${point}: killed at ${point}, restarted, converged clean`, () => crashAt(point), 120_000);
});
