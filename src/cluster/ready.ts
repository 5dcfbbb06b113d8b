import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ClusterError } from './cluster.state.ts';
import { haproxyServers } from './haproxy.ts';
import { isAlive, waitUntil, type NodeRecord } from './node.ts';

// When a node counts as up: bringing the cluster up (cluster.ts) and starting one node again
// (cluster.manage.ts) wait for the same signs.

export const READY_TIMEOUT_MS = 90_000;

/** Waits for a 200 from `url`; a node that died meanwhile fails at once, with the end of its log. */
export async function waitHttp(url: string, what: string, node?: NodeRecord): Promise<void> {
  await waitUntil(what, READY_TIMEOUT_MS, async () => {
    if (node && !isAlive(node.pid))
      throw new ClusterError(`${what} exited; the end of ${node.log}:\n${tail(node.log)}`);
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined);
    return response?.status === 200 ? true : undefined;
  });
}

function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** An API process is back once the balancer sends it traffic, not when its process exists. */
export async function waitBalanced(dir: string, name: string): Promise<void> {
  await waitUntil(`HAProxy marking ${name} UP`, READY_TIMEOUT_MS, async () =>
    (await haproxyServers(path.join(dir, 'haproxy')).catch(() => undefined))?.get(name) === 'UP' ? true : undefined,
  );
}
