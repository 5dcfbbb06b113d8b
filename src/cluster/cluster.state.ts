import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ROOT } from '../platform/root.ts';
import type { NetPlan } from './netns.ts';
import { GiveUp, type NodeKind, type NodeRecord } from './node.ts';

// What up (cluster.ts) and the commands on a running cluster (cluster.manage.ts) share: the state
// file and its words, a leaf so that neither imports the other for them.

export { ROOT };
export const STOP_GRACE_MS = 10_000;

/** What `cluster.json` keeps: enough for status, kill, start and down from another process. */
export interface ClusterState {
  dir: string;
  api: string;
  channel: string;
  databaseUrl: string;
  monitor: string;
  natsUrl: string | undefined;
  nodes: NodeRecord[];
  /** `cluster up --isolated`: the namespaces, bridge and /24 made for it, and the cuts now (netns.ts). */
  network?: NetPlan;
}

export interface NodeView {
  name: string;
  kind: NodeKind;
  role: string;
  pid: number;
  url: string;
  netns?: string;
  address?: string;
  /** An API process only: HAProxy's verdict on it ("UP", "DOWN"…), the one that decides its traffic. */
  balancer?: string;
}

export class ClusterError extends GiveUp {}

export const stateFile = (dir: string) => path.join(dir, 'cluster.json');

export async function readState(dir: string): Promise<ClusterState> {
  if (!existsSync(stateFile(dir)))
    throw new ClusterError(`no cluster in ${dir} (start one with: flashpay cluster up --dir ${dir})`);
  return JSON.parse(await readFile(stateFile(dir), 'utf8')) as ClusterState;
}

export async function saveState(state: ClusterState): Promise<void> {
  await writeFile(stateFile(state.dir), `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
}
