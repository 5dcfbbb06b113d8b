import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { browserIt, launchBrowser, SCREENSHOT_DIR, type TestBrowser } from '../support/browser.ts';
import { createSku, startPaymentStack, TENANT, type PaymentStack } from '../support/payments.ts';
import { stockPumpFor } from '../../src/orders/queued/pump.ts';
import { countRows } from '../support/stack.ts';

// Generous bounds: a loaded 2-core machine runs Chromium beside the suite. Waits are on state.
const TEST_MS = 120_000;

describe('W15 storefront in Chromium: order, pay once, survive a refresh', () => {
  let stack: PaymentStack;
  let browser: TestBrowser;

  beforeAll(async () => {
    stack = await startPaymentStack();
    await createSku(stack, { sku: 'tee', name: 'Launch tee', price: 1990, stock: 5 });
    await createSku(stack, { sku: 'mug', name: 'Launch mug', price: 990, stock: 5 });
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  async function signIn(page: Page, user: string): Promise<void> {
    await page.goto(`${stack.url}/`);
    // Pages of one browser context share localStorage: an earlier test's buyer may still be signed in.
    const signOut = page.getByRole('button', { name: 'Sign out' });
    if (await signOut.isVisible()) await signOut.click();
    await page.getByLabel('Buyer name').fill(user);
    await page.getByLabel('Shop').fill(TENANT);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByLabel('Quantity of Launch tee').waitFor();
  }

  const orderCard = (page: Page) => page.locator('article.order').first();

  browserIt(
    'W15-01: two lines ordered with a double click make one order; Pay double-clicked charges once; a refresh while UNKNOWN still shows PAID arriving',
    async () => {
      // Proves the page's idempotency keys and the database-held truth: one order, one charge, and a
      // reload mid-payment finds the order still waiting and sees its result when it lands.
      browser = await launchBrowser();
      const page = await browser.page();
      await signIn(page, 'alice');
      // Every form control has a name a screen reader can say.
      const unlabelled = await page.evaluate(
        () =>
          [...document.querySelectorAll('input, select, button')].filter((el) => {
            const input = el as HTMLInputElement;
            return !(
              input.labels?.length ||
              el.getAttribute('aria-label') ||
              (el.tagName === 'BUTTON' && el.textContent?.trim())
            );
          }).length,
      );
      expect(unlabelled).toBe(0);

      await page.getByLabel('Quantity of Launch tee').fill('1');
      await page.getByLabel('Quantity of Launch mug').fill('2');
      await page.getByRole('button', { name: 'Order', exact: true }).dblclick();
      await expect.poll(() => orderCard(page).getAttribute('data-status'), { timeout: 30_000 }).toBe('CREATED');
      const orderId = (await orderCard(page).getAttribute('data-order-id')) ?? '';
      expect(await countRows(stack.db, 'orders', 'user_id = $1', ['alice'])).toBe(1);
      expect(await page.locator('article.order').count()).toBe(1);

      // The provider charges but its reply is late (UNKNOWN) and its notification is held.
      await stack.control('POST', '/_control/callbacks', { mode: 'HOLD' });
      await stack.control('POST', '/_control/faults', {
        op: 'charge',
        kind: 'DELAY_RESPONSE',
        merchant_order: orderId,
        ms: 2_000,
      });
      await orderCard(page).getByRole('button', { name: 'Pay', exact: true }).dblclick();
      await expect.poll(() => orderCard(page).getAttribute('data-status'), { timeout: 30_000 }).toBe('UNKNOWN');

      await page.reload();
      await expect.poll(() => orderCard(page).getAttribute('data-status'), { timeout: 30_000 }).toBe('UNKNOWN');
      await expect.poll(() => orderCard(page).textContent()).toContain('waiting for the result');

      const held = (await stack.control('GET', '/_control/callbacks/held')) as Array<{
        id: string;
        merchant_order: string;
      }>;
      await stack.control('POST', '/_control/callbacks/release', {
        ids: held.filter((c) => c.merchant_order === orderId).map((c) => c.id),
      });
      await expect.poll(() => orderCard(page).getAttribute('data-status'), { timeout: 30_000 }).toBe('PAID');

      expect(await stack.chargeRequests(orderId)).toBe(1);
      const charges = (await stack.statement()).lines.filter(
        (l) => l.type === 'CHARGE' && l.merchant_order === orderId,
      );
      expect(charges.map((l) => l.amount)).toEqual([1990 + 2 * 990]);
      await orderCard(page).getByText('Timeline').click();
      await expect
        .poll(() => orderCard(page).locator('li').allTextContents())
        .toEqual(expect.arrayContaining([expect.stringMatching(/UNKNOWN → PAID/)]));
      await page.screenshot({ path: path.join(SCREENSHOT_DIR, 'storefront.png'), fullPage: true });
      // On a phone's width nothing is cut off sideways.
      await page.setViewportSize({ width: 390, height: 844 });
      // (Layout settles a frame after the resize.)
      await expect.poll(() => page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    },
    TEST_MS,
  );

  browserIt(
    'W15-02: a queued order with too low a wallet goes RELEASING → CANCELLED on screen',
    async () => {
      // Proves the page follows a queued order through the stock side: PENDING → CREATED, then a
      // wallet too low → RELEASING → CANCELLED, with the unit back on sale.
      const bob = await stack.token(TENANT, 'bob');
      const probe = await stack.call('POST', '/v1/orders', {
        token: bob,
        body: { sku: 'tee' },
        headers: { 'idempotency-key': 'probe-async', prefer: 'respond-async' },
      });
      // Queued orders are part of the product (issue 14): a 201 here fails, it no longer skips (issue 55).
      expect(probe.status, 'POST /v1/orders with Prefer: respond-async answers 202 PENDING').toBe(202);
      await stack.call('POST', '/v1/admin/wallets/carol/credits', {
        token: stack.admin,
        body: { amount: 100, reason: 'test top-up' },
        headers: { 'idempotency-key': 'carol-top-up' },
      });
      const page = await browser.page();
      await signIn(page, 'carol');
      await page.getByLabel('Quantity of Launch tee').fill('1');
      await page.getByLabel(/Queue it/).check();
      await page.getByRole('button', { name: 'Order', exact: true }).click();
      // The test stack runs no background loops: the stock side is pumped here, as `start` does every 100 ms.
      const pumped = async () => {
        await stockPumpFor(stack.deps).drain();
        return orderCard(page).getAttribute('data-status');
      };
      await expect.poll(pumped, { timeout: 60_000 }).toBe('CREATED');
      await orderCard(page).getByRole('button', { name: 'Pay with wallet' }).click();
      await expect.poll(pumped, { timeout: 60_000 }).toBe('CANCELLED');
      await orderCard(page).getByText('Timeline').click();
      await expect
        .poll(() => orderCard(page).locator('li').allTextContents())
        .toEqual(expect.arrayContaining([expect.stringMatching(/RELEASING → CANCELLED/)]));
    },
    TEST_MS,
  );
});
