import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ClusterError } from './cluster.state.ts';
import { pgBinDir } from './postgres.ts';

// What `cluster up` checks before it starts anything: the engines from Debian's packages, and a
// folder the postgres user reaches.

export const APT_LINE = 'apt-get install -y postgresql-15-auto-failover haproxy nats-server';

function onPath(binary: string): boolean {
  return (process.env.PATH ?? '').split(':').some((dir) => dir && existsSync(path.join(dir, binary)));
}

/** One clear error naming the apt-get line, before anything is started. */
export function checkEngines(natsNodes: number): void {
  const missing = [
    !onPath('pg_autoctl') || !pgBinDir() ? 'pg_autoctl (postgresql-15-auto-failover)' : '',
    !onPath('haproxy') && !existsSync('/usr/sbin/haproxy') ? 'haproxy' : '',
    natsNodes > 0 && !onPath('nats-server') && !existsSync('/usr/sbin/nats-server') ? 'nats-server' : '',
  ].filter(Boolean);
  if (missing.length > 0)
    throw new ClusterError(`flashpay cluster needs ${missing.join(', ')}: install them with\n  ${APT_LINE}`);
}

/** As root, PostgreSQL runs as `postgres`, which must be able to reach the cluster's directory. */
export function checkReachable(dir: string): void {
  if (process.getuid?.() !== 0) return;
  try {
    execFileSync('runuser', ['-u', 'postgres', '--', 'test', '-x', path.dirname(dir)]);
  } catch {
    throw new ClusterError(`the postgres user cannot reach ${dir}; choose a --dir it can, e.g. /tmp/flashpay-cluster`);
  }
}
