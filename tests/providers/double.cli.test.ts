import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import Stripe from 'stripe';
import { afterEach, describe, expect, it } from 'vitest';
import { BIN, waitForExit } from '../support/process.ts';

interface Spawned {
  child: ChildProcess;
  firstLine(): Promise<string>;
  exitCode(): Promise<number | null>;
  stop(): Promise<void>;
}

/** `flashpay <args>` as a user runs it, its development credentials in a directory of its own. */
async function spawnFlashpay(args: string[]): Promise<Spawned> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-double-'));
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, FLASHPAY_DATA_DIR: dataDir, STRIPE_SECRET_KEY: '', ALIPAY_PRIVATE_KEY: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = waitForExit(child);
  return {
    child,
    async firstLine() {
      const lines = createInterface({ input: child.stdout! });
      const [line] = (await once(lines, 'line', { signal: AbortSignal.timeout(20_000) })) as [string];
      return line;
    },
    exitCode: () => exited,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      expect(await exited).toBe(0);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

// `flashpay double stripe|alipay` (CONTRACT.md, "Real providers"): one JSON line with the URL, the
// provider's wire format behind it, the fake channel's control API with --control.
describe('flashpay double', () => {
  let running: Spawned | undefined;
  afterEach(async () => {
    await running?.stop();
    running = undefined;
  });

  it('DB-01 stripe: prints {"url"} (and with --env what points flashpay at it); the official SDK charges it; /_control sees the request', async () => {
    running = await spawnFlashpay(['double', 'stripe', '--control', '--env']);
    const first = JSON.parse(await running.firstLine()) as { url: string; env: Record<string, string> };
    expect(first.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(first.env).toMatchObject({
      STRIPE_API_BASE: first.url,
      STRIPE_WEBHOOK_SECRET: expect.stringMatching(/^whsec_/),
    });
    const base = new URL(first.url);
    const sdk = new Stripe(first.env.STRIPE_SECRET_KEY!, {
      host: base.hostname,
      port: Number(base.port),
      protocol: 'http',
      maxNetworkRetries: 0,
    });
    const pi = await sdk.paymentIntents.create(
      {
        amount: 1990,
        currency: 'usd',
        confirm: true,
        payment_method: 'pm_card_visa',
        metadata: { order_id: 'ord_db01' },
      },
      { idempotencyKey: 'pi-ord_db01' },
    );
    expect([pi.status, pi.amount_received]).toEqual(['succeeded', 1990]);
    const requests = (await (await fetch(`${first.url}/_control/requests`)).json()) as {
      charge: { by_order: Record<string, number> };
      received: Array<{ method: string; path: string; headers: Record<string, string> }>;
    };
    expect(requests.charge.by_order).toEqual({ ord_db01: 1 });
    const create = requests.received.find((r) => r.path === '/v1/payment_intents');
    expect(create?.headers['idempotency-key']).toBe('pi-ord_db01');
    // The key is never echoed whole.
    expect(create?.headers.authorization).not.toContain(first.env.STRIPE_SECRET_KEY);
  });

  it('DB-02 alipay answers its gateway; an unknown provider or flag exits 2 and starts nothing', async () => {
    running = await spawnFlashpay(['double', 'alipay']);
    const { url } = JSON.parse(await running.firstLine()) as { url: string };
    // Without --control there is no control API; the gateway answers (an unsigned request is refused in Alipay's words).
    expect((await fetch(`${url}/_control/requests`)).status).toBe(404);
    const gateway = await fetch(`${url}/gateway.do?method=alipay.trade.query`, { method: 'POST' });
    expect(gateway.status).toBeLessThan(500);
    await running.stop();
    running = undefined;
    for (const args of [
      ['double', 'paypal'],
      ['double', 'stripe', '--bogus'],
    ]) {
      const refused = await spawnFlashpay(args);
      expect(await refused.exitCode()).toBe(2);
    }
  });
});
