import { describe, expect, it } from 'vitest';
import { clusterEngines, clusterFolder, freeRange, PORTS_NEEDED, runCli } from '../support/cluster-ports.ts';

// Issue 52, CP-03 (CP-01/02, the refusals, are in tests/cli/cluster-ports.test.ts): `flashpay cluster
// up --port-base N` puts every listener of the cluster on N, N+1, … instead of kernel-picked ports.

const engines = clusterEngines();

describe('flashpay cluster up --port-base (CP-03, issue 52)', () => {
  const folder = clusterFolder();

  it.skipIf(!engines)(
    'CP-03: every listener of the cluster is on a port from the base upward',
    async () => {
      const base = await freeRange();
      const up = await runCli([
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
        '--json',
      ]);
      expect(up.code, up.stderr).toBe(0);
      const state = JSON.parse(up.stdout) as {
        api: string;
        channel: string;
        nodes: Array<{ name: string; url: string }>;
      };
      const portOf = (url: string) => Number(/:(\d+)(?:\/|$)/.exec(url)?.[1]);
      const ports = [state.api, state.channel, ...state.nodes.map((n) => n.url)].map(portOf);
      expect(
        ports.every((p) => p >= base && p < base + PORTS_NEEDED),
        JSON.stringify(state.nodes),
      ).toBe(true);
      expect(new Set(state.nodes.map((n) => portOf(n.url))).size).toBe(state.nodes.length);
      const down = await runCli(['cluster', 'down', '--dir', folder()]);
      expect(down.code, down.stderr).toBe(0);
    },
    300_000,
  );
});
