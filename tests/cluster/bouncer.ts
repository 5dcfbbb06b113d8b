import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort, startEmbedded, type EmbeddedCluster } from '../../src/platform/embedded.ts';

/** Debian's pgbouncer (`.ci/run` installs it); absent: the suite says why it skipped. */
export function pgbouncerBinary(): { ok: true; bin: string } | { ok: false; why: string } {
  const found = spawnSync('sh', ['-c', 'command -v pgbouncer || ls /usr/sbin/pgbouncer'], { encoding: 'utf8' });
  const bin = found.stdout.trim().split('\n')[0];
  if (found.status === 0 && bin) return { ok: true, bin };
  if (process.env.FLASHPAY_REQUIRE_CLUSTER === '1')
    throw new Error('pgbouncer is not installed (apt-get install pgbouncer)');
  return { ok: false, why: 'skipped: no pgbouncer (apt-get install pgbouncer)' };
}

export interface Bouncer {
  /** PostgreSQL itself (the direct URL) and through the pooler, for one database. */
  direct(database: string): string;
  pooled(database: string): string;
  /** Through the pooler's alias `<database>_one`: transaction mode with a single server connection. */
  pooledSingle(database: string): string;
  log(): string;
  stop(): Promise<void>;
}

async function waitPort(port: number, child: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}):\n${log()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.end();
        resolve(true);
      });
      socket.on('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`pgbouncer did not listen on ${port}:\n${log()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * An embedded PostgreSQL and Debian's pgbouncer in transaction mode in front of it, on free
 * loopback ports. `auth_type = any`: the pooler logs in with the superuser named in [databases],
 * so clients need no password file of its own (a test double of an operator's userlist).
 */
export async function startBouncer(databases: string[]): Promise<Bouncer> {
  const found = pgbouncerBinary();
  if (!found.ok) throw new Error(found.why);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-pgbouncer-'));
  await chmod(dir, 0o755); // pgbouncer runs as postgres (it refuses root) and reads its config here
  let pg: EmbeddedCluster | undefined;
  let child: ChildProcess | undefined;
  try {
    pg = await startEmbedded({ dataDir: path.join(dir, 'pg'), persistent: false });
    const server = new URL(pg.url('postgres'));
    const port = await freePort();
    const target = `host=127.0.0.1 port=${server.port} user=${server.username} password=${decodeURIComponent(server.password)}`;
    const lines = databases.flatMap((db) => [
      `${db} = ${target} dbname=${db}`,
      `${db}_one = ${target} dbname=${db} pool_size=1`,
    ]);
    const ini = [
      '[databases]',
      ...lines,
      `* = ${target}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = any',
      'pool_mode = transaction',
      'default_pool_size = 20',
      'max_client_conn = 500',
      // LIFO reuse of server connections (the default): what the negative controls rely on.
      'server_round_robin = 0',
      'server_reset_query =',
      'log_connections = 0',
      'log_disconnections = 0',
    ].join('\n');
    const config = path.join(dir, 'pgbouncer.ini');
    await writeFile(config, `${ini}\n`, { mode: 0o644 });
    let output = '';
    child = spawn(found.bin, ['-u', 'postgres', config], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
    await waitPort(port, child, () => output);
    const running = child;
    const cluster = pg;
    const auth = `${server.username}:${server.password}`;
    return {
      direct: (database) => cluster.url(database),
      pooled: (database) => `postgres://${auth}@127.0.0.1:${port}/${database}`,
      pooledSingle: (database) => `postgres://${auth}@127.0.0.1:${port}/${database}_one`,
      log: () => output,
      async stop() {
        if (running.exitCode === null && running.signalCode === null) {
          const exited = new Promise((resolve) => running.once('exit', resolve));
          process.kill(-(running.pid ?? 0), 'SIGKILL');
          await exited;
        }
        await cluster.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    if (child?.pid && child.exitCode === null) process.kill(-child.pid, 'SIGKILL');
    await pg?.stop();
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}
