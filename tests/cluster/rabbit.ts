import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

// Debian's scripts, called directly: /usr/sbin's wrappers switch to the rabbitmq user, whose
// HOME (and so Erlang cookie) is the machine's own broker's, which these nodes must not touch.
const BIN = '/usr/lib/rabbitmq/bin';

const EPHEMERAL_FROM = 32_768;
const distPortOf = (port: number) => port - 1000;

/** Debian's rabbitmq-server (`.ci/run` installs it); absent: the suite says why it skipped. */
export function rabbitmqInstalled(): { ok: true } | { ok: false; why: string } {
  if (existsSync(path.join(BIN, 'rabbitmq-server')) && existsSync(path.join(BIN, 'rabbitmqctl'))) return { ok: true };
  if (process.env.FLASHPAY_REQUIRE_CLUSTER === '1') throw new Error('rabbitmq-server is not installed');
  return { ok: false, why: 'skipped: no broker (apt-get install rabbitmq-server)' };
}

export interface RabbitNode {
  name: string;
  /** AMQP port on 127.0.0.1. */
  port: number;
  child: ChildProcess;
}

export interface RabbitCluster {
  nodes: RabbitNode[];
  /** AMQP_URL naming every node: `amqp://guest:guest@127.0.0.1:p1,127.0.0.1:p2,…`. */
  url: string;
  /** One node's URL. */
  urlOf(node: RabbitNode): string;
  ctl(node: RabbitNode, args: string[]): Promise<string>;
  /** The node that leads a quorum queue now. */
  leaderOf(queue: string, via: RabbitNode): Promise<RabbitNode>;
  /** kill -9 of the node's Erlang VM (its whole process group). */
  kill(node: RabbitNode): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Three RabbitMQ nodes `fp1@localhost`… on the given AMQP ports (distribution on port − 1000),
 * data and logs in a temp dir, one Erlang cookie (a HOME of their own), no plugins; the second
 * and third join the first.
 *
 * Both ports must lie below the kernel's ephemeral range (32768–60999 here). A distribution port
 * inside it (it was port + 20000) can be held by a client socket of an earlier test, even one in
 * TIME_WAIT, which erl's listener (no SO_REUSEADDR) cannot bind; the VM then exits with status 0
 * and writes no log (CI, stop 44: the cluster suite's HTTP load ran first).
 */
export async function startRabbitCluster(ports: number[], log: (line: string) => void): Promise<RabbitCluster> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-rabbit-'));
  const home = path.join(dir, 'home');
  await mkdir(home, { recursive: true });
  await writeFile(path.join(home, '.erlang.cookie'), `flashpay${Math.random().toString(36).slice(2)}`, { mode: 0o400 });
  await chmod(path.join(home, '.erlang.cookie'), 0o400);
  await writeFile(path.join(dir, 'enabled_plugins'), '[].\n');
  await writeFile(path.join(dir, 'rabbitmq-env.conf'), '');
  const nodes: RabbitNode[] = [];
  const envOf = (name: string, port: number): NodeJS.ProcessEnv => ({
    ...process.env,
    HOME: home,
    RABBITMQ_NODENAME: `${name}@localhost`,
    RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
    RABBITMQ_NODE_PORT: String(port),
    RABBITMQ_DIST_PORT: String(distPortOf(port)),
    RABBITMQ_MNESIA_BASE: path.join(dir, name, 'mnesia'),
    RABBITMQ_LOG_BASE: path.join(dir, name, 'log'),
    RABBITMQ_PID_FILE: path.join(dir, name, 'pid'),
    RABBITMQ_ENABLED_PLUGINS_FILE: path.join(dir, 'enabled_plugins'),
    RABBITMQ_CONF_ENV_FILE: path.join(dir, 'rabbitmq-env.conf'),
    RABBITMQ_CONFIG_FILE: path.join(dir, name, 'rabbitmq.conf'),
    RABBITMQ_ADVANCED_CONFIG_FILE: path.join(dir, name, 'advanced.config'),
    ERL_EPMD_ADDRESS: '127.0.0.1',
    ERL_FLAGS: '-kernel inet_dist_use_interface {127,0,0,1}',
  });
  const ctl = async (node: RabbitNode, args: string[]) => {
    const { stdout } = await run(path.join(BIN, 'rabbitmqctl'), ['-n', `${node.name}@localhost`, ...args], {
      env: envOf(node.name, node.port),
      timeout: 120_000,
    });
    return stdout;
  };
  const kill = async (node: RabbitNode) => {
    if (node.child.exitCode !== null || node.child.signalCode !== null) return;
    const exited = new Promise((resolve) => node.child.once('exit', resolve));
    process.kill(-(node.child.pid ?? 0), 'SIGKILL');
    await exited;
  };
  const stop = async () => {
    for (const node of nodes) await kill(node).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const spawnNode = (name: string, port: number) => {
      // What the VM prints before its log file is set up (a port it cannot bind) goes to boot.out.
      const out = openSync(path.join(dir, name, 'boot.out'), 'a');
      // Detached: its own process group, so a kill takes the VM and its helpers at once.
      const child = spawn(path.join(BIN, 'rabbitmq-server'), [], {
        env: envOf(name, port),
        detached: true,
        stdio: ['ignore', out, out],
      });
      closeSync(out);
      return child;
    };
    /** Up, or false when its VM exited while booting. */
    const awaitUp = async (node: RabbitNode): Promise<boolean> => {
      // await_startup waits for a booting node, but fails at once while the VM is not yet registered.
      const deadline = Date.now() + 120_000;
      for (;;) {
        if (node.child.exitCode !== null) return false;
        const up = await ctl(node, ['await_startup', '--timeout', '120']).then(
          () => true,
          (error: unknown) => {
            if (Date.now() > deadline) throw error;
            return false;
          },
        );
        if (up) return true;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    };
    // One node at a time: three VMs booting at once on two cores once saw one exit (status 0)
    // right after its listener started (CI, stop 43). A node whose VM exits while booting is
    // started once more before the cluster is given up.
    for (const [i, port] of ports.entries()) {
      const name = `fp${i + 1}`;
      await mkdir(path.join(dir, name, 'log'), { recursive: true });
      for (const p of [port, distPortOf(port)])
        if (p >= EPHEMERAL_FROM)
          throw new Error(`${name}: port ${p} lies in the ephemeral range (from ${EPHEMERAL_FROM})`);
      await writeFile(path.join(dir, name, 'rabbitmq.conf'), `listeners.tcp.local = 127.0.0.1:${port}\n`);
      await writeFile(path.join(dir, name, 'advanced.config'), '[].\n');
      const node: RabbitNode = { name, port, child: spawnNode(name, port) };
      nodes.push(node);
      if (!(await awaitUp(node))) {
        log(`${name} exited (${node.child.exitCode}) while booting: starting it once more`);
        node.child = spawnNode(name, port);
        if (!(await awaitUp(node))) throw new Error(`${name} exited (${node.child.exitCode})`);
      }
      log(`${node.name} up on ${node.port}`);
    }
    const [first, ...rest] = nodes as [RabbitNode, ...RabbitNode[]];
    for (const node of rest) {
      await ctl(node, ['stop_app']);
      await ctl(node, ['join_cluster', `${first.name}@localhost`]);
      await ctl(node, ['start_app']);
      log(`${node.name} joined ${first.name}`);
    }
  } catch (error) {
    const tail = async (file: string) =>
      `--- ${path.relative(dir, file)}\n${(await readFile(file, 'utf8').catch(() => '')).split('\n').slice(-15).join('\n')}`;
    const logs = await Promise.all(
      nodes.flatMap((n) => [
        tail(path.join(dir, n.name, 'boot.out')),
        tail(path.join(dir, n.name, 'log', `${n.name}@localhost.log`)),
      ]),
    );
    await stop();
    throw new Error(`${(error as Error).message}\n${logs.join('\n')}`);
  }
  const urlOf = (node: RabbitNode) => `amqp://guest:guest@127.0.0.1:${node.port}`;
  return {
    nodes,
    url: `amqp://guest:guest@${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`,
    urlOf,
    ctl,
    async leaderOf(queue, via) {
      const out = await ctl(via, ['list_queues', '--quiet', '--no-table-headers', 'name', 'leader']);
      const line = out.split('\n').find((l) => l.split('\t')[0] === queue);
      const leader = line
        ?.split('\t')[1]
        ?.trim()
        .replace(/@localhost$/, '');
      const node = nodes.find((n) => n.name === leader);
      if (!node) throw new Error(`no leader for ${queue} in:\n${out}`);
      return node;
    },
    kill,
    stop,
  };
}
