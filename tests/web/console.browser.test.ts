import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect } from 'vitest';
import { browserIt, launchBrowser, SCREENSHOT_DIR } from '../support/browser.ts';
import { skuCounters } from '../support/fixtures.ts';
import { createSku, startPaymentStack } from '../support/payments.ts';

const TEST_MS = 180_000;

async function signIn(page: Page, url: string, adminToken: string): Promise<void> {
  await page.goto(url);
  await page.getByLabel(/Paste a token/).fill(adminToken);
  await page.getByRole('button', { name: 'Open the console' }).click();
  await page.locator('#total').waitFor();
}

describe('issue 36: the operator console in Chromium', () => {
  browserIt(
    'OC-01, MF-13: search → open the order (where its money is: provider and payment id) → refund (confirmed) → REFUNDED with one refund line at the provider; the same intent again does nothing; the deep link opens it',
    async () => {
      // Proves the console's refund acts once at the provider, through the confirmation and its own key.
      const stack = await startPaymentStack();
      const browser = await launchBrowser();
      try {
        await createSku(stack, { sku: 'tee', price: 1990, stock: 5 });
        const { orderId, token } = await stack.buy('alice', 'tee');
        expect((await stack.pay(token, orderId)).body.status).toBe('PAID');
        await stack.buy('bob', 'tee');

        const page = await browser.page();
        await signIn(page, `${stack.url}/ops`, stack.admin);
        await page.getByLabel('Search').fill('alice');
        await page.getByRole('button', { name: 'Search', exact: true }).click();
        const row = page.locator(`#orders tr[data-order-id="${orderId}"]`);
        await expect.poll(() => page.locator('#orders tbody tr').count()).toBe(1);
        await expect.poll(() => row.textContent()).toMatch(/alice.*PAID.*19\.90 EUR/);
        await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'console-search.png'), fullPage: true });

        await row.getByRole('button', { name: orderId }).click();
        await expect.poll(() => page.locator('#detail-status').textContent()).toBe('PAID');
        expect(new URL(page.url()).pathname).toBe(`/ops/orders/${orderId}`);
        expect(await page.locator('#detail').textContent()).not.toMatch(/\bnull\b|undefined/);
        // MF-13 (issue 48): where the money is — the provider the pay went to and its payment id.
        expect(await page.locator('#detail-payment').textContent()).toMatch(
          /^Payment at fake · provider payment id \S+$/,
        );
        // By keyboard: Enter on the button opens the confirmation; Escape backs out and nothing is sent.
        await page.getByRole('button', { name: `Refund ${orderId}` }).focus();
        await page.keyboard.press('Enter');
        await expect.poll(() => page.locator('#confirm').evaluate((d) => (d as HTMLDialogElement).open)).toBe(true);
        await page.keyboard.press('Escape');
        await expect.poll(() => page.locator('#confirm').evaluate((d) => (d as HTMLDialogElement).open)).toBe(false);
        expect((await stack.order(orderId)).status).toBe('PAID');
        await page.getByRole('button', { name: `Refund ${orderId}` }).click();
        const dialog = page.locator('#confirm');
        await expect.poll(() => dialog.textContent()).toContain(`Refund order ${orderId} of 19.90 EUR to alice`);
        // Issue 48: the dialog asks why; the reason goes to the audit trail shown in the timeline.
        await page.getByLabel('Reason').fill('buyer called: wrong size');
        await page.getByRole('button', { name: 'Refund 19.90 EUR' }).click();
        await expect.poll(() => page.locator('#detail-status').textContent(), { timeout: 30_000 }).toBe('REFUNDED');
        await expect.poll(() => page.locator('#detail').textContent()).toContain('refund by operator ops');
        await expect.poll(() => page.locator('#detail').textContent()).toContain('“buyer called: wrong size”');

        const refunds = async () =>
          (await stack.statement()).lines.filter((l) => l.type === 'REFUND' && l.merchant_order === orderId).length;
        expect(await refunds()).toBe(1);
        expect(await page.getByRole('button', { name: `Refund ${orderId}` }).count()).toBe(0);
        // The same intent sent again (a second click that got through, a retry after a lost answer)
        // carries the stored key: the server replays, the provider is not called again.
        const again = await page.evaluate(async (id) => {
          const name = Object.keys(sessionStorage).find((k) => k.startsWith(`flashpay.ops.refund.${id}.`));
          const response = await fetch(`/v1/admin/orders/${id}/refund`, {
            method: 'POST',
            headers: {
              authorization: `Bearer ${localStorage.getItem('flashpay.admin')}`,
              'idempotency-key': sessionStorage.getItem(name ?? '') ?? 'missing',
              'content-type': 'application/json',
            },
            body: JSON.stringify({ reason: 'second click' }),
          });
          return { status: response.status, replayed: response.headers.get('idempotent-replayed') };
        }, orderId);
        expect(again).toEqual({ status: 200, replayed: 'true' });
        expect(await refunds()).toBe(1);
        expect((await stack.order(orderId)).status).toBe('REFUNDED');
        expect(await skuCounters(stack, 'tee')).toMatchObject({ available: 4, confirmed: 0, held: 1 });

        // The deep link opens the order after sign-in (the token is in this browser already).
        const linked = await browser.page();
        await linked.goto(`${stack.url}/ops/orders/${orderId}`);
        await expect.poll(() => linked.locator('#detail-status').textContent()).toBe('REFUNDED');
        expect(await linked.locator('#detail').textContent()).not.toMatch(/\bnull\b|undefined/);
        // Reconciliation judges the refund: provider net and wallet net shown in one unit, nothing off.
        const drained = await stack.call('POST', '/v1/admin/outbox/drain', { token: stack.operator });
        expect([drained.status, drained.body.failed]).toEqual([200, 0]);
        await linked.getByRole('button', { name: 'Reconcile now' }).click();
        await expect.poll(() => linked.locator('#verdict').textContent(), { timeout: 30_000 }).toBe('clean');
        expect(await linked.locator('#channel-net').textContent()).toBe('0.00');
        expect(await linked.locator('#wallet-net').textContent()).toBe('0.00');
        await linked.screenshot({ path: path.join(SCREENSHOT_DIR, 'console-order.png'), fullPage: true });
        // Every field has a label; on a phone's width nothing scrolls sideways.
        const unlabelled = await linked
          .locator('input, select')
          .evaluateAll((els) => els.filter((e) => !(e as HTMLInputElement).labels?.length).map((e) => e.id));
        expect(unlabelled).toEqual([]);
        await linked.setViewportSize({ width: 390, height: 844 });
        await expect.poll(() => linked.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      } finally {
        await browser.close();
        await stack.close();
      }
    },
    TEST_MS,
  );

  browserIt(
    'OC-02: the SKU page shows its counters and edits the price; the next order snapshots the new price, the earlier keeps its own',
    async () => {
      // Proves a price set from the console is the one the next order is charged, and no earlier order changes.
      const stack = await startPaymentStack();
      const browser = await launchBrowser();
      try {
        await createSku(stack, { sku: 'mug', price: 1990, stock: 10 });
        const before = await stack.buy('carol', 'mug');
        const page = await browser.page();
        await page.goto(`${stack.url}/ops/skus/mug`);
        await page.getByLabel(/Paste a token/).fill(stack.admin);
        await page.getByRole('button', { name: 'Open the console' }).click();
        await expect.poll(() => page.locator('#sku-available').textContent()).toBe('9');
        expect(await page.locator('#sku-held').textContent()).toBe('1');
        expect(await page.locator('#sku-sold').textContent()).toBe('0');
        await page.getByLabel(/New price/).fill('24.90');
        await page.getByRole('button', { name: 'Set price' }).click();
        await expect.poll(() => page.locator('#sku-price').textContent()).toBe('24.90 EUR');
        await page.getByLabel('Units to add').fill('5');
        await page.getByRole('button', { name: 'Add stock' }).click();
        await expect.poll(() => page.locator('#sku-total').textContent()).toBe('15');
        await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'console-sku.png'), fullPage: true });

        const after = await stack.buy('dave', 'mug');
        const view = async (id: string) =>
          (await stack.call('GET', `/v1/admin/orders/${id}`, { token: stack.admin })).body as {
            amount: number;
            lines: Array<{ unit_price: number }>;
          };
        expect((await view(after.orderId)).amount).toBe(2490);
        expect((await view(after.orderId)).lines[0]?.unit_price).toBe(2490);
        expect((await view(before.orderId)).amount).toBe(1990);
        expect(await skuCounters(stack, 'mug')).toMatchObject({ total: 15, available: 13, held: 2 });
      } finally {
        await browser.close();
        await stack.close();
      }
    },
    TEST_MS,
  );

  browserIt(
    'OC-03: an UNKNOWN order resolved by hand from its deep link: the dialog asks for the finding and the receipt; PAID, the receipt in the timeline',
    async () => {
      // Proves the console's hand resolution is confirmed, needs a receipt, and is recorded with the operator.
      const stack = await startPaymentStack();
      const browser = await launchBrowser();
      try {
        await createSku(stack, { sku: 'cap', price: 1500, stock: 2 });
        const { orderId, token } = await stack.buy('erin', 'cap');
        await stack.control('POST', '/_control/callbacks', { mode: 'HOLD' });
        await stack.control('POST', '/_control/faults', {
          op: 'charge',
          kind: 'DELAY_RESPONSE',
          merchant_order: orderId,
          ms: 1_500,
        });
        expect((await stack.pay(token, orderId)).body.status).toBe('UNKNOWN');
        const page = await browser.page();
        await signIn(page, `${stack.url}/ops/orders/${orderId}`, stack.admin);
        await expect.poll(() => page.locator('#detail-status').textContent()).toBe('UNKNOWN');
        await page.getByRole('button', { name: `Resolve by hand ${orderId}` }).click();
        await expect
          .poll(() => page.locator('#confirm').textContent())
          .toContain(`Resolve order ${orderId} of 15.00 EUR`);
        await page.getByLabel('Outcome', { exact: true }).selectOption('CHARGED');
        await page.getByLabel(/Receipt/).fill('dashboard txn 77');
        await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'console-resolve.png') });
        await page.getByRole('button', { name: 'Resolve', exact: true }).click();
        await expect.poll(() => page.locator('#detail-status').textContent(), { timeout: 30_000 }).toBe('PAID');
        await expect
          .poll(() => page.locator('#detail').textContent())
          .toContain('resolved by operator ops (receipt dashboard txn 77)');
        expect(await skuCounters(stack, 'cap')).toMatchObject({ available: 1, confirmed: 1 });
        await stack.control('POST', '/_control/callbacks', { mode: 'AUTO' });
      } finally {
        await browser.close();
        await stack.close();
      }
    },
    TEST_MS,
  );
});
