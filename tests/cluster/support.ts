import { chmod, mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { APT_LINE, checkEngines, clusterStatus, clusterUp, type ClusterState } from '../../src/cluster/index.ts';
import { tokenSigner } from '../../src/platform/auth.ts';
import { createPool, type Db } from '../../src/platform/db.ts';

/**
 * The cluster suite runs where Debian's engines are installed (`.ci/run` installs them and sets
 * FLASHPAY_REQUIRE_CLUSTER=1, which turns their absence into a failure). Anywhere else it says why
 * it skipped.
 */
export function clusterEngines(nats: number): { ok: true } | { ok: false; why: string } {
  try {
    checkEngines(nats);
    return { ok: true };
  } catch (error) {
    if (process.env.FLASHPAY_REQUIRE_CLUSTER === '1') throw error;
    return { ok: false, why: `skipped: no cluster engines (${APT_LINE})` };
  }
}

export interface TestCluster {
  state: ClusterState;
  /** A pool on the formation (multi-host URL): follows the primary like the API processes. */
  db: Db;
  token(user: string, scope?: 'buyer' | 'admin' | 'operator'): Promise<string>;
  primary(): Promise<string>;
  standby(): Promise<string>;
}

export async function startTestCluster(options: {
  apis: number;
  nats: number;
  isolated?: boolean;
}): Promise<TestCluster> {
  // mkdtemp makes it 0700; the postgres user must reach it.
  const dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-cluster-'));
  await chmod(dir, 0o755);
  const state = await clusterUp({ dir, ...options, log: (line) => process.stderr.write(`cluster: ${line}\n`) });
  const secret = (await readFile(path.join(dir, 'data', 'jwt.secret'), 'utf8')).trim();
  const signer = tokenSigner(secret);
  const roleOf = async (role: string) => {
    const nodes = (await clusterStatus(dir)).nodes.filter((n) => n.kind === 'postgres' && n.role === role);
    if (nodes.length !== 1) throw new Error(`expected one ${role}, found ${JSON.stringify(nodes)}`);
    return nodes[0]!.name;
  };
  return {
    state,
    db: createPool(state.databaseUrl, 4),
    token: (user, scope = 'buyer') => signer.sign({ tenantId: 'acme', userId: user, scope }),
    primary: () => roleOf('primary'),
    standby: () => roleOf('standby'),
  };
}
