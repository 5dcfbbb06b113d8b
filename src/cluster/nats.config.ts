import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { NodeSpec } from './node.ts';

/**
 * One node of a JetStream cluster on loopback: its client port, its route port, routes to every
 * node (itself included, which nats-server skips) and its own store. Three nodes keep a Raft quorum
 * with one of them dead.
 */
export async function natsNodeSpecs(options: {
  dir: string;
  logs: string;
  ports: { client: number; route: number }[];
  /** Each node's address (`cluster up --isolated`); loopback by default. */
  hosts?: string[];
}): Promise<NodeSpec[]> {
  const host = (index: number) => options.hosts?.[index] ?? '127.0.0.1';
  const routes = options.ports.map((p, index) => `nats-route://${host(index)}:${p.route}`);
  return Promise.all(
    options.ports.map(async (port, index) => {
      const name = `nats${index + 1}`;
      const store = path.join(options.dir, name);
      await mkdir(store, { recursive: true });
      const file = path.join(options.dir, `${name}.conf`);
      await writeFile(
        file,
        `server_name: ${name}
listen: ${host(index)}:${port.client}
jetstream { store_dir: ${JSON.stringify(store)} }
cluster {
  name: flashpay
  listen: ${host(index)}:${port.route}
  routes: [${routes.map((r) => JSON.stringify(r)).join(', ')}]
}
`,
      );
      return {
        name,
        kind: 'nats' as const,
        url: `nats://${host(index)}:${port.client}`,
        command: 'nats-server',
        args: ['-c', file],
        env: {},
        log: path.join(options.logs, `${name}.log`),
      };
    }),
  );
}
