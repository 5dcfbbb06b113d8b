import { readdir } from 'node:fs/promises';
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { clusterEngines, clusterFolder, freeRange, runCli } from '../support/cluster-ports.ts';

// Issue 52: `flashpay cluster up --port-base N` puts the cluster's listeners on N, N+1, … instead
// of kernel-picked ports (a firewall rule, a bookmark, a second cluster beside it). A bad N is a
// usage error; a taken port in the range is refused before any node starts. CP-03, a whole cluster
// on its base, is in the cluster suite (tests/cluster/port-base.test.ts): it takes a minute.

const engines = clusterEngines();

describe('flashpay cluster up --port-base (CP, issue 52)', () => {
  const folder = clusterFolder();

  it('CP-01: a port base that is not an unprivileged port with room above it is a usage error; nothing starts', async () => {
    for (const bad of ['80', 'abc', '65100', '-1']) {
      const r = await runCli(['cluster', 'up', '--dir', folder(), '--port-base', bad]);
      expect([bad, r.code, r.stdout]).toEqual([bad, 2, '']);
      expect(r.stderr).toMatch(/--port-base must be|must be a non-negative integer/);
    }
    expect(await readdir(folder())).toEqual([]);
  }, 60_000);

  it.skipIf(!engines)(
    'CP-02: a taken port in the range is refused by name before any node starts (exit 1)',
    async () => {
      const base = await freeRange();
      const holder = net.createServer();
      await new Promise<void>((resolve) => holder.listen(base + 3, '127.0.0.1', resolve));
      try {
        const r = await runCli([
          'cluster',
          'up',
          '--dir',
          folder(),
          '--api',
          '1',
          '--nats',
          '0',
          '--port-base',
          String(base),
        ]);
        expect([r.code, r.stdout]).toEqual([1, '']);
        expect(r.stderr).toContain(`--port-base ${base}: port ${base + 3} is in use`);
        const status = await runCli(['cluster', 'status', '--dir', folder(), '--json']);
        expect(status.code === 0 ? (JSON.parse(status.stdout) as { nodes: unknown[] }).nodes : []).toEqual([]);
      } finally {
        await new Promise((resolve) => holder.close(resolve));
      }
    },
    120_000,
  );
});
