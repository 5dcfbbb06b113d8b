import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FAULT_TENANT, startFaultStack, type FaultStack } from '../faults/support.ts';
import { waitFor } from '../support/poll.ts';
import { alertRules, PROMETHEUS, ROOT, runProm } from './prometheus.ts';

// The rules and the dashboard against a real `flashpay start`: every metric they query is on its
// /metrics, and a real Prometheus scraping it during a sale whose provider fails sees the alert fire.

const METRICS_TOKEN = 'test-only-metrics-token-of-at-least-32-bytes';

/** The metric names an expression reads (a histogram's _bucket/_sum/_count read its family). */
function metricsOf(expr: string): string[] {
  return [...expr.matchAll(/\bflashpay_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, ''));
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('alert rules on a real stack (issue 53)', () => {
  const stacks: FaultStack[] = [];
  let prometheus: ChildProcess | undefined;
  let dir = '';
  afterAll(async () => {
    if (prometheus?.exitCode === null) {
      const exited = new Promise((resolve) => prometheus!.once('exit', resolve));
      prometheus.kill('SIGKILL');
      await exited;
    }
    for (const stack of stacks) await stack.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('PR-03: every metric the rules and the dashboard query is on /metrics of a running stack', async () => {
    const stack = await startFaultStack({ env: { FLASHPAY_METRICS_TOKEN: METRICS_TOKEN } });
    stacks.push(stack);
    const exposed = await (
      await fetch(`${stack.proc.api}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    ).text();
    const families = new Set([...exposed.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
    const dashboard = JSON.parse(await readFile(path.join(ROOT, 'deploy/grafana/flashpay-sale.json'), 'utf8')) as {
      panels: { targets: { expr: string }[] }[];
    };
    const queried = new Set([
      ...(await alertRules()).flatMap((rule) => metricsOf(rule.expr)),
      ...dashboard.panels.flatMap((panel) => panel.targets.flatMap((target) => metricsOf(target.expr))),
    ]);
    expect(queried.size).toBeGreaterThanOrEqual(14);
    expect([...queried].filter((name) => !families.has(name))).toEqual([]);
    // The gauges read from the database answer with it up.
    expect(exposed).toMatch(/^flashpay_database_up 1$/m);
    expect(exposed).toMatch(/^flashpay_outbox_dead 0$/m);
  }, 120_000);

  it.runIf(runProm)(
    'PR-04: a real Prometheus scraping a sale whose provider fails sees FlashpayProviderErrors fire for the fake provider',
    async () => {
      const stack = await startFaultStack({ env: { FLASHPAY_METRICS_TOKEN: METRICS_TOKEN } });
      stacks.push(stack);
      dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-prom-'));
      // The shipped rules, with their `for` cut to 0 s so that a test waits seconds, not minutes:
      // the expressions are the ones an operator runs.
      const rules = (await readFile(path.join(ROOT, 'deploy/prometheus/flashpay.rules.yml'), 'utf8')).replace(
        /^(\s+)for: \S+$/gm,
        '$1for: 0s',
      );
      await writeFile(path.join(dir, 'rules.yml'), rules);
      const api = new URL(stack.proc.api);
      await writeFile(
        path.join(dir, 'prometheus.yml'),
        [
          'global: { scrape_interval: 1s, evaluation_interval: 1s }',
          'rule_files: [rules.yml]',
          'scrape_configs:',
          '  - job_name: flashpay',
          `    authorization: { credentials: ${METRICS_TOKEN} }`,
          `    static_configs: [{ targets: ['${api.host}'] }]`,
          '',
        ].join('\n'),
      );
      const port = await freePort();
      prometheus = spawn(
        PROMETHEUS,
        [
          `--config.file=${path.join(dir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${path.join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
        ],
        { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let log = '';
      prometheus.stderr?.on('data', (chunk: Buffer) => (log += chunk.toString()));
      const promApi = `http://127.0.0.1:${port}/api/v1`;
      const ask = async <T>(route: string): Promise<T | undefined> => {
        try {
          const response = await fetch(`${promApi}${route}`);
          return response.ok ? ((await response.json()) as { data: T }).data : undefined;
        } catch {
          return undefined;
        }
      };
      // Scraping before the sale: the target is up.
      await waitFor(
        async () => {
          const targets = await ask<{ activeTargets: { health: string }[] }>('/targets');
          return targets?.activeTargets[0]?.health === 'up';
        },
        `prometheus scraping the stack (log: ${log.slice(-500)})`,
        60_000,
        200,
      );

      // The provider's UNKNOWN series is stored at 0 before the sale: rate() sees the burst that follows.
      await waitFor(
        async () => {
          const query = encodeURIComponent(
            'flashpay_provider_calls_total{provider="fake",operation="charge",answer="UNKNOWN"}',
          );
          const found = await ask<{ result: unknown[] }>(`/query?query=${query}`);
          return (found?.result.length ?? 0) > 0;
        },
        'the UNKNOWN series scraped at 0',
        30_000,
        200,
      );

      // The sale: 30 buyers; the provider answers every third charge with a 500.
      expect(
        (await stack.adminCall('POST', '/v1/admin/skus', { sku: 'tee', name: 'Tee', price: 990, stock: 30 })).status,
      ).toBe(201);
      const fault = await fetch(`${stack.proc.channel}/_control/faults`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ op: 'charge', kind: 'ERROR_500', times: 10 }),
      });
      expect(fault.status).toBeLessThan(300);
      const outcomes = await Promise.all(
        Array.from({ length: 30 }, async (_, i) => {
          const token = await stack.signer.sign({ tenantId: FAULT_TENANT, userId: `buyer-${i}`, scope: 'buyer' });
          const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
          const created = (await (
            await fetch(`${stack.proc.api}/v1/orders`, {
              method: 'POST',
              headers: { ...headers, 'idempotency-key': `o-${i}` },
              body: '{"sku":"tee"}',
            })
          ).json()) as { order_id: string };
          const paid = await fetch(`${stack.proc.api}/v1/orders/${created.order_id}/pay`, {
            method: 'POST',
            headers: { authorization: headers.authorization, 'idempotency-key': `p-${i}` },
          });
          return ((await paid.json()) as { status: string }).status;
        }),
      );
      // At least the ten the provider failed (a loaded machine may time out more: UNKNOWN too).
      expect(outcomes.filter((s) => s === 'UNKNOWN').length).toBeGreaterThanOrEqual(10);

      const firing = await waitFor(
        async () => {
          const alerts = await ask<{ alerts: { labels: Record<string, string>; state: string }[] }>('/alerts');
          return alerts?.alerts.find((a) => a.labels.alertname === 'FlashpayProviderErrors' && a.state === 'firing');
        },
        'FlashpayProviderErrors firing',
        60_000,
        250,
      );
      expect(firing.labels).toMatchObject({ provider: 'fake', severity: 'page' });
    },
    180_000,
  );
});
