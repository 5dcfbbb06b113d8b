import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  clusterDown,
  clusterHeal,
  clusterPartition,
  clusterStatus,
  pgDirOf,
  setReplicationQuorum,
  waitUntil,
} from '../../src/cluster/index.ts';
import { haproxyServers } from '../../src/cluster/haproxy.ts';
import { isRoot } from '../../src/cluster/netns.ts';
import { clusterEngines, startTestCluster, type TestCluster } from './support.ts';
import { runSale, type SaleOutcome } from './sale.ts';
import { checkHistory, type OrderRow, type TransitionRow } from './history.ts';

// Partitions of issue 50 on real engines, each node in a network namespace of its own
// (`cluster up --isolated`): a partition drops packets, nothing is refused and nothing dies. Each
// case runs a sale through HAProxy with keyed retries and judges the history (history.ts): every
// 201 and PAID answered is in the database, each order's transitions one legal chain, no unit
// sold twice.
const engines = isRoot() ? clusterEngines(0) : { ok: false as const, why: 'skipped: namespaces need root' };
if (!engines.ok) {
  if (process.env.FLASHPAY_REQUIRE_CLUSTER === '1') throw new Error(`tests/cluster/partition.test.ts ${engines.why}`);
  console.warn(`tests/cluster/partition.test.ts ${engines.why}`);
}
const PROMOTION_BOUND_MS = 90_000;
const REJOIN_BOUND_MS = 120_000;
// How long PT-02 keeps api1 cut off once HAProxy has taken it out.
const CUT_HELD_MS = 15_000;

describe.skipIf(!engines.ok)('a flash sale on an isolated cluster cut by partitions', () => {
  let cluster: TestCluster;
  let api: string;
  let admin: string;

  beforeAll(async () => {
    cluster = await startTestCluster({ apis: 2, nats: 0, isolated: true });
    api = cluster.state.api;
    admin = await cluster.token('ops', 'admin');
  }, 300_000);
  afterEach(async ({ task }) => {
    if (task.result?.state !== 'fail' || !cluster) return;
    await clusterHeal(cluster.state.dir).catch(() => undefined);
    const status = await clusterStatus(cluster.state.dir).catch((error: Error) => error.message);
    console.error(`${task.name} failed; cluster status: ${JSON.stringify(status)}`);
  });
  afterAll(async () => {
    await cluster?.db.end();
    if (cluster) await clusterDown(cluster.state.dir);
  }, 60_000);

  // As every client of the contract: a dropped connection or a 502/503/504 is asked again, same key.
  const putSku = async (sku: string, stock: number) => {
    const status = await waitUntil(`SKU ${sku} created`, 30_000, async () => {
      const response = await fetch(`${api}/v1/admin/skus`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${admin}`,
          'content-type': 'application/json',
          'idempotency-key': `sku-${sku}`,
        },
        body: JSON.stringify({ sku, name: sku, price: 1990, stock, per_user_limit: 1 }),
      }).catch(() => undefined);
      await response?.arrayBuffer();
      return response && ![502, 503, 504].includes(response.status) ? response.status : undefined;
    });
    expect(status).toBe(201);
  };
  const violations = async (sku: string, stock: number, sale: SaleOutcome) => {
    // A 500 is a bug; 502/503/504 are retried by the buyers and counted.
    expect([...sale.statuses.keys()].filter((status) => status.startsWith('500'))).toEqual([]);
    const orders = (
      await cluster.db.query<OrderRow>('SELECT order_id, user_id, status FROM orders WHERE sku = $1', [sku])
    ).rows;
    const transitions = (
      await cluster.db.query<TransitionRow>(
        `SELECT t.order_id, t.from_status, t.to_status, t.version FROM order_transitions t
           JOIN orders o USING (order_id) WHERE o.sku = $1`,
        [sku],
      )
    ).rows;
    return checkHistory({ sale, orders, transitions, stock });
  };
  const judge = async (sku: string, stock: number, sale: SaleOutcome) => {
    expect(await violations(sku, stock, sale)).toEqual([]);
    expect(sale.created.size).toBeGreaterThan(0);
    expect(sale.paid.size).toBeGreaterThan(0); // the PAID half of the check is not vacuous
  };
  const roleOf = async (name: string) =>
    (await clusterStatus(cluster.state.dir)).nodes.find((n) => n.name === name)?.role;

  it('PT-01: the primary cut off from monitor, standby and every API: the standby is promoted, the old primary rejoins as a standby after heal, no answered 201 or PAID is lost', async () => {
    const stock = 120;
    await putSku('pt01', stock);
    const primary = await cluster.primary();
    const standby = await cluster.standby();
    let cutAt = 0;
    let promotedMs = 0;
    const sale = await runSale({
      api,
      sku: 'pt01',
      buyers: 180,
      concurrency: 16,
      token: (user) => cluster.token(user),
      faultAfter: 30,
      fault: async () => {
        await clusterPartition(cluster.state.dir, [primary]);
        cutAt = Date.now();
        await waitUntil('the standby promoted', PROMOTION_BOUND_MS, async () =>
          (await roleOf(standby)) === 'primary' ? true : undefined,
        );
        promotedMs = Date.now() - cutAt;
      },
      run: 'pt01',
    });
    const healedAt = Date.now();
    await clusterHeal(cluster.state.dir);
    await waitUntil('the old primary a standby again', REJOIN_BOUND_MS, async () =>
      (await roleOf(primary)) === 'standby' ? true : undefined,
    );
    const rejoinMs = Date.now() - healedAt;
    console.log(
      `PT-01: ${sale.created.size} created, ${sale.paid.size} paid; cut -> ${standby} primary ${promotedMs} ms; ` +
        `writes resumed ${sale.firstWriteAfterFaultMs! - cutAt} ms after the cut; heal -> ${primary} standby ${rejoinMs} ms; ` +
        `statuses ${JSON.stringify([...sale.statuses])}`,
    );
    await judge('pt01', stock, sale);
    expect(sale.firstWriteAfterFaultMs).toBeGreaterThan(cutAt);
  });

  it('PT-02: one API process cut off from the databases: HAProxy stops sending to it, no 500, nothing lost; after heal it is UP again', async () => {
    const stock = 80;
    await putSku('pt02', stock);
    const haproxyDir = `${cluster.state.dir}/haproxy`;
    const seen: Record<string, string | undefined> = {};
    const sale = await runSale({
      api,
      sku: 'pt02',
      buyers: 120,
      concurrency: 12,
      token: (user) => cluster.token(user),
      faultAfter: 20,
      // The cut lasts while the sale goes on through api2, then heals: a keyed request api1 had
      // begun stays REQUEST_IN_PROGRESS for as long as api1 is cut off (found here: a pay unanswered
      // for 120 s with the cut held to the end), and is finished by api1 once it reaches the database.
      fault: async () => {
        await clusterPartition(cluster.state.dir, ['api1'], ['pg1', 'pg2', 'monitor']);
        await waitUntil('HAProxy marking api1 DOWN', 30_000, async () =>
          (await haproxyServers(haproxyDir))?.get('api1')?.startsWith('DOWN') ? true : undefined,
        );
        const during = await haproxyServers(haproxyDir);
        seen.api1 = during.get('api1');
        seen.api2 = during.get('api2');
        await new Promise((resolve) => setTimeout(resolve, CUT_HELD_MS)); // the fault's length, not a wait for state
        await clusterHeal(cluster.state.dir);
      },
      run: 'pt02',
    });
    expect(seen.api1).toMatch(/^DOWN/);
    expect(seen.api2).toMatch(/^UP/);
    await judge('pt02', stock, sale);
    await waitUntil('HAProxy marking api1 UP', 30_000, async () =>
      (await haproxyServers(haproxyDir)).get('api1') === 'UP' ? true : undefined,
    );
    console.log(
      `PT-02: ${sale.created.size} created, ${sale.paid.size} paid; statuses ${JSON.stringify([...sale.statuses])}`,
    );
  });
  /**
   * The primary cut off from the monitor, its standby, the worker and api2, still reached by api1:
   * a sale through both APIs; the standby promoted, heal, the old primary a standby again.
   */
  const halfCut = async (run: string, stock: number) => {
    await putSku(run, stock);
    const primary = await cluster.primary();
    const standby = await cluster.standby();
    const sale = await runSale({
      api,
      sku: run,
      buyers: 180,
      concurrency: 16,
      token: (user) => cluster.token(user),
      faultAfter: 30,
      fault: async () => {
        await clusterPartition(cluster.state.dir, [primary], ['monitor', standby, 'worker', 'api2']);
        await waitUntil('the standby promoted', PROMOTION_BOUND_MS, async () =>
          (await roleOf(standby)) === 'primary' ? true : undefined,
        );
      },
      run,
    });
    await clusterHeal(cluster.state.dir);
    await waitUntil('the old primary a standby again', REJOIN_BOUND_MS, async () =>
      (await roleOf(primary)) === 'standby' ? true : undefined,
    );
    console.log(
      `${run}: ${sale.created.size} created, ${sale.paid.size} paid; statuses ${JSON.stringify([...sale.statuses])}`,
    );
    return { sale, standby };
  };

  it("PT-03: the primary cut off from monitor and standby but reached by one API: that API's writes hang or are answered unknown, none succeeds and vanishes", async () => {
    const { sale } = await halfCut('pt03', 120);
    await judge('pt03', 120, sale);
  });

  it('PT-04: negative control of PT-03: with asynchronous replication the old primary acknowledges writes the new one never had, and the checker names them', async () => {
    const standby = await cluster.standby();
    await setReplicationQuorum(pgDirOf(cluster.state.dir), standby, false);
    // The primary applies the new synchronous_standby_names (apply_settings) before it is `primary` again.
    const settled = async () => {
      await waitUntil('the formation settled', 60_000, async () => (await cluster.primary()) && cluster.standby());
    };
    try {
      await settled();
      const { sale } = await halfCut('pt04', 120);
      const found = await violations('pt04', 120, sale);
      console.log(`PT-04: the checker found ${found.length}: ${found.slice(0, 5).join('; ')}`);
      expect(found.filter((v) => v.startsWith('lost:')).length).toBeGreaterThan(0);
    } finally {
      await setReplicationQuorum(pgDirOf(cluster.state.dir), standby, true);
      await settled();
    }
  });
});
