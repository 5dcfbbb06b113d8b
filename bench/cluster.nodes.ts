import { readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import {
  clusterKill,
  clusterStart,
  clusterStatus,
  pgDirOf,
  readState,
  setReplicationQuorum,
  waitUntil,
} from '../src/cluster/index.ts';
import { startProbe } from './cluster.load.ts';

// What the cluster part does to the cluster's nodes, each waited for on the engines' own state:
// replication switched and seen on the primary, an API process out of HAProxy and back in, a
// primary killed and the first write through HAProxy timed, the old primary back as the standby.

const SWITCH_TIMEOUT_MS = 60_000;
const REJOIN_TIMEOUT_MS = 180_000;
const FIRST_WRITE_TIMEOUT_MS = 120_000;

export async function pgRoles(dir: string): Promise<{ primary: string; standby: string }> {
  const nodes = (await clusterStatus(dir)).nodes.filter((n) => n.kind === 'postgres');
  const primary = nodes.filter((n) => n.role === 'primary');
  const standby = nodes.filter((n) => n.role === 'standby');
  if (primary.length !== 1 || standby.length !== 1)
    throw new Error(`expected a primary and a standby: ${nodes.map((n) => `${n.name} ${n.role}`).join(', ')}`);
  return { primary: primary[0]!.name, standby: standby[0]!.name };
}

async function sqlRow(dir: string, node: string, text: string): Promise<Record<string, unknown> | undefined> {
  const url = (await readState(dir)).nodes.find((n) => n.name === node)?.url;
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  await client.connect();
  try {
    return (await client.query(text)).rows[0] as Record<string, unknown> | undefined;
  } finally {
    await client.end();
  }
}

export async function serverVersion(dir: string, node: string): Promise<string> {
  return String((await sqlRow(dir, node, 'SHOW server_version'))?.server_version);
}

/** The primary's committed transactions (pg_stat_database, flushed by backends within ~1 s) and WAL position. */
export async function primaryCounters(dir: string, primary: string): Promise<{ commits: number; walBytes: number }> {
  const row = await sqlRow(
    dir,
    primary,
    `SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()) AS commits,
            pg_current_wal_lsn() - '0/0'::pg_lsn AS wal`,
  );
  return { commits: Number(row?.commits), walBytes: Number(row?.wal) };
}

/** The primary with a standby streaming and counted for its commits (`sync` or `quorum`). */
async function synchronousStandbys(dir: string, primary: string): Promise<number> {
  const row = await sqlRow(
    dir,
    primary,
    `SELECT count(*)::int AS n FROM pg_stat_replication WHERE state = 'streaming' AND sync_state IN ('sync', 'quorum')`,
  );
  return Number(row?.n);
}

/** pg_auto_failover's replication-quorum of the standby, then the primary's setting seen to follow. */
export async function setReplication(dir: string, synchronous: boolean): Promise<void> {
  const { primary, standby } = await pgRoles(dir);
  await setReplicationQuorum(pgDirOf(dir), standby, synchronous);
  await waitUntil(`${synchronous ? 'synchronous' : 'asynchronous'} replication`, SWITCH_TIMEOUT_MS, async () => {
    const names = String((await sqlRow(dir, primary, 'SHOW synchronous_standby_names'))?.synchronous_standby_names);
    if ((names !== '') !== synchronous) return undefined;
    const roles = await pgRoles(dir).catch(() => undefined); // settled: primary and standby again
    if (roles?.primary !== primary) return undefined;
    return synchronous ? ((await synchronousStandbys(dir, primary)) > 0 ? true : undefined) : true;
  });
}

/** Lines of HAProxy's log (its foreground alerts: `Server apis/api2 is DOWN`, `… is UP`) naming `text`. */
async function haproxyLines(dir: string, text: string): Promise<number> {
  const log = (await readState(dir)).nodes.find((n) => n.kind === 'haproxy')?.log ?? path.join(dir, 'logs/haproxy.log');
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => line.includes(text)).length;
}

/** SIGKILL to an API process, then wait until HAProxy's health check has taken it out. */
export async function takeApiOut(dir: string, name: string): Promise<void> {
  const downs = await haproxyLines(dir, `apis/${name} is DOWN`);
  await clusterKill(dir, name);
  await waitUntil(`HAProxy taking ${name} out`, SWITCH_TIMEOUT_MS, async () =>
    (await haproxyLines(dir, `apis/${name} is DOWN`)) > downs ? true : undefined,
  );
}

export async function bringApiBack(dir: string, name: string): Promise<void> {
  const ups = await haproxyLines(dir, `apis/${name} is UP`);
  await clusterStart(dir, name);
  await waitUntil(`HAProxy routing to ${name} again`, SWITCH_TIMEOUT_MS, async () =>
    (await haproxyLines(dir, `apis/${name} is UP`)) > ups ? true : undefined,
  );
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

export interface FailoverSample {
  killed: string;
  /** From the SIGKILL of the primary's node to the answer of the first create sent after it died. */
  outageMs: number;
  /** From the SIGKILL to the monitor showing the standby as the primary (wait_primary), polled every 200 ms. */
  promotedMs: number;
  /** From clusterStart of the old primary to it streaming as the synchronous standby again. */
  rejoinMs: number;
}

/** Kills the primary under a write probe through HAProxy, then brings it back as the standby. */
export async function timeFailover(
  dir: string,
  api: string,
  probe: { token: string; sku: string; keyPrefix: string },
): Promise<FailoverSample> {
  const { primary, standby } = await pgRoles(dir);
  const writers = startProbe(api, probe.token, probe.sku, probe.keyPrefix);
  let outageMs: number;
  let promoted: Promise<number | undefined> = Promise.resolve(undefined);
  try {
    await within(writers.firstAcceptedAfter(performance.now()), FIRST_WRITE_TIMEOUT_MS, 'a write before the kill');
    const killAt = performance.now();
    await clusterKill(dir, primary);
    promoted = waitUntil(`${standby} promoted`, FIRST_WRITE_TIMEOUT_MS, async () => {
      const { nodes } = await clusterStatus(dir);
      return nodes.some((n) => n.name === standby && n.role === 'primary') ? performance.now() - killAt : undefined;
    }).catch(() => undefined); // awaited below, or never when the writes did not resume
    // Writes sent before the node was gone may have committed on it: only later ones count.
    const acceptedAt = await within(
      writers.firstAcceptedAfter(performance.now()),
      FIRST_WRITE_TIMEOUT_MS,
      `the first write after ${primary} died`,
    );
    outageMs = acceptedAt - killAt;
  } finally {
    await writers.stop();
  }
  const promotedMs = await promoted;
  if (promotedMs === undefined) throw new Error(`the monitor never showed ${standby} promoted`);
  const restartAt = performance.now();
  await clusterStart(dir, primary);
  await waitUntil(`${primary} back as the synchronous standby`, REJOIN_TIMEOUT_MS, async () => {
    const roles = await pgRoles(dir).catch(() => undefined);
    if (roles?.primary !== standby || roles.standby !== primary) return undefined;
    return (await synchronousStandbys(dir, standby)) > 0 ? true : undefined;
  });
  return {
    killed: primary,
    outageMs: Math.round(outageMs),
    promotedMs: Math.round(promotedMs),
    rejoinMs: Math.round(performance.now() - restartAt),
  };
}
