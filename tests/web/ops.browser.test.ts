import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect } from 'vitest';
import { tokenSigner } from '../../src/platform/auth.ts';
import { staleFloorMs } from '../../src/recovery/index.ts';
import { browserIt, launchBrowser, SCREENSHOT_DIR } from '../support/browser.ts';
import { freshDatabase } from '../support/db.ts';
import { createSku, startPaymentStack } from '../support/payments.ts';
import { BIN, spawnStart, waitForExit } from '../support/process.ts';

const TEST_MS = 180_000;

async function openConsole(page: Page, url: string, adminToken: string): Promise<void> {
  await page.goto(`${url}/ops`);
  await page.getByLabel(/Paste a token/).fill(adminToken);
  await page.getByRole('button', { name: 'Open the console' }).click();
  await page.locator('#total').waitFor();
}

describe('W15 operations console in Chromium', () => {
  browserIt(
    'W15-03: an operator finds an order that needs a person, retries it now, and sees it converge to PAID',
    async () => {
      // Proves the console's needs-a-person list and its "retry now" act on the real order: the note
      // comes from ten failed recovery passes, and one retry after the provider recovers settles it.
      const stack = await startPaymentStack();
      const browser = await launchBrowser();
      try {
        await createSku(stack, { sku: 'tee', price: 1990, stock: 2 });
        const { orderId, token } = await stack.buy('bob', 'tee');
        await stack.control('POST', '/_control/callbacks', { mode: 'HOLD' });
        await stack.control('POST', '/_control/faults', {
          op: 'charge',
          kind: 'DELAY_RESPONSE',
          merchant_order: orderId,
          ms: 1_500,
        });
        expect((await stack.pay(token, orderId)).body.status).toBe('UNKNOWN');
        // The provider's query fails on every recovery pass until the order is left for a person.
        const floor = staleFloorMs(stack.deps.config);
        for (let pass = 0; pass < 20 && !(await stack.order(orderId)).attention; pass++) {
          if (((await stack.control('GET', '/_control/faults')) as unknown[]).length === 0) {
            await stack.control('POST', '/_control/faults', {
              op: 'query',
              kind: 'ERROR_500',
              merchant_order: orderId,
              times: 1,
            });
          }
          await stack.call('POST', '/v1/admin/recovery/run', { token: stack.admin, body: { stale_after_ms: floor } });
          stack.clock.advance(10 * 60_000);
        }
        expect((await stack.order(orderId)).attention).toMatch(/cannot converge/);
        expect(await stack.control('GET', '/_control/faults')).toEqual([]);

        const page = await browser.page();
        await openConsole(page, stack.url, stack.admin);
        const row = page.locator(`#attention tr[data-order-id="${orderId}"]`);
        await expect.poll(() => row.textContent(), { timeout: 30_000 }).toMatch(/UNKNOWN.*cannot converge/);
        await row.getByRole('button', { name: `Retry ${orderId} now` }).click();
        await expect.poll(() => page.locator('#detail-status').textContent(), { timeout: 30_000 }).toBe('PAID');
        await expect
          .poll(() => page.locator('#attention-result').textContent())
          .toContain(`${orderId}: PAID — converged`);
        await expect.poll(() => row.count()).toBe(0);
        // On a phone's width nothing is cut off sideways.
        await page.setViewportSize({ width: 390, height: 844 });
        // (The chart redraws at the new width a frame later.)
        await expect.poll(() => page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
        const after = await stack.order(orderId);
        expect([after.status, after.attention]).toEqual(['PAID', null]);
        expect(await stack.chargeRequests(orderId)).toBe(1);
      } finally {
        await browser.close();
        await stack.close();
      }
    },
    TEST_MS,
  );

  browserIt(
    "W15-04: during a `flashpay sim` against `flashpay start`, the console charts orders/s and its counts equal the API's at the end",
    async () => {
      // Proves the console reads the same truth as the API while a real sale runs through every fault.
      const db = await freshDatabase({ poolSize: 1 });
      const dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-ops-'));
      await chmod(dir, 0o755);
      const jwt = 'ops-console-jwt-secret-of-at-least-32-bytes';
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        DATABASE_URL: db.url,
        FLASHPAY_JWT_SECRET: jwt,
        FLASHPAY_NOTIFY_SECRET: 'ops-console-notify-secret-at-least-32-bytes',
        FLASHPAY_EVENTS_SECRET: 'ops-console-events-secret-at-least-32-bytes',
        FLASHPAY_LOG_LEVEL: 'error',
        FLASHPAY_RECOVERY_INTERVAL_MS: '500',
        FLASHPAY_STALE_AFTER_MS: '2000',
        FLASHPAY_POOL_SIZE: '6',
      };
      const stack = await spawnStart(dir, env, ['--control']);
      const browser = await launchBrowser({ width: 1280, height: 1400 });
      try {
        const admin = await tokenSigner(jwt).sign({ tenantId: 'sim', userId: 'ops', scope: 'admin' });
        const page = await browser.page();
        await openConsole(page, stack.api, admin);
        const sim = spawn(
          process.execPath,
          [
            BIN,
            'sim',
            '--seed',
            '29',
            '--json',
            '--api',
            stack.api,
            '--channel',
            stack.channel,
            '--tenant',
            'sim',
            '--orders',
            '12',
            '--stock',
            '10',
            '--late',
            '4',
            '--mix',
            'decline=2,lost=2,linger=1,nopay=1,expire=2',
            '--refund-timeouts',
            '1',
          ],
          { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let out = '';
        let err = '';
        sim.stdout.on('data', (c: Buffer) => (out += c.toString()));
        sim.stderr.on('data', (c: Buffer) => (err += c.toString()));
        expect(await waitForExit(sim), err).toBe(0);
        const report = JSON.parse(out) as { final: Record<string, number> };

        const shown = async () =>
          Object.fromEntries(
            await page
              .locator('#counts [data-count]')
              .evaluateAll((cells) => cells.map((c) => [c.getAttribute('data-count'), Number(c.textContent)])),
          );
        await expect.poll(shown, { timeout: 30_000 }).toEqual(report.final);
        // The API's own list of the tenant's orders (fewer than its limit of 50), counted by state.
        const listed = (await (
          await fetch(`${stack.api}/v1/admin/orders`, { headers: { authorization: `Bearer ${admin}` } })
        ).json()) as { orders: Array<{ status: string }> };
        const byState: Record<string, number> = {};
        for (const o of listed.orders) byState[o.status] = (byState[o.status] ?? 0) + 1;
        expect(await shown()).toEqual(byState);
        const total = Object.values(report.final).reduce((a, b) => a + b, 0);
        await expect.poll(() => page.locator('#total').textContent()).toBe(String(total));
        // The chart saw the sale as it happened: every order counted once across its points.
        await expect
          .poll(async () => Number(await page.locator('#chart-box').getAttribute('data-orders-seen')))
          .toBe(total);

        await page.getByRole('button', { name: 'Reconcile now' }).click();
        await expect.poll(() => page.locator('#verdict').textContent(), { timeout: 30_000 }).toBe('clean');
        await expect.poll(() => page.locator('#drift').textContent()).toBe('0.00');
        expect(await page.locator('#recon-oversold').textContent()).toBe('no');
        await page.locator('#counts button', { hasText: 'PAID' }).click();
        await expect.poll(() => page.locator('#orders tbody tr').count()).toBe(report.final.PAID);
        await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'ops.png'), fullPage: true });
      } finally {
        await browser.close();
        stack.child.kill('SIGTERM');
        await waitForExit(stack.child);
        await db.drop();
        await rm(dir, { recursive: true, force: true });
      }
    },
    TEST_MS,
  );
});
