import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect } from 'vitest';
import { staleFloorMs } from '../../src/recovery/index.ts';
import { browserIt, launchBrowser, SCREENSHOT_DIR } from '../support/browser.ts';
import { placeOrder } from '../support/fixtures.ts';
import { cancelWithoutRelease, confirmAtCreate } from '../support/plant.ts';
import { createSku, eventually, startPaymentStack, TENANT, type PaymentStack } from '../support/payments.ts';

// Issue 52: the console as the on-call engineer's tool, in Chromium, while a sale runs.

const TEST_MS = 240_000;
// A provider's raw JSON answer, as it lands in a note for a person: long, unbroken, nested.
const RAW_JSON = JSON.stringify({
  error: {
    code: 'resource_missing',
    doc_url: 'https://docs.example/error-codes/resource-missing',
    message:
      'No such payment_intent: pi_3QxYz2LkdIwHu7ix0aBcDeFgHiJkLmNoPqRsTuVwXyZ; a similar object exists in live mode',
    param: 'intent',
    request_log_url: 'https://dashboard.example/logs/req_0123456789abcdefghijABCDEFGHIJ?t=1796690206',
    type: 'invalid_request_error',
  },
});

/** Buyers on `sku` until stopped: two of three pay, the third leaves its hold; sold-out ends nothing. */
function runSale(stack: PaymentStack, sku: string) {
  let running = true;
  let placed = 0;
  const done = (async () => {
    for (let i = 0; running; i++) {
      const token = await stack.token(TENANT, `buyer-${i}`);
      const created = await placeOrder(stack, token, `sale-${i}`, { sku });
      if (created.status !== 201) continue;
      placed++;
      if (i % 3 !== 2) await stack.pay(token, created.body.order_id as string);
    }
  })();
  return {
    placed: () => placed,
    async stop() {
      running = false;
      await done;
    },
  };
}

async function signIn(page: Page, url: string, adminToken: string): Promise<void> {
  await page.goto(url);
  await page.getByLabel(/Paste a token/).fill(adminToken);
  await page.getByRole('button', { name: 'Open the console' }).click();
  await page.locator('#total').waitFor();
}

/** The search box is at the top of the page as laid out now (sticky on a desktop). */
async function searchOnTop(page: Page): Promise<number> {
  const box = await page.locator('#q').boundingBox();
  return box ? Math.round(box.y) : -1;
}

const shot = (page: Page, name: string) =>
  page.screenshot({ path: path.join(SCREENSHOT_DIR, `console-oncall-${name}.png`), fullPage: true });

const sideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth);

describe('issue 52: the on-call console in Chromium', () => {
  browserIt(
    'ON-01: during a sale — SKU list and SKU page answer sold / paid / refunded / oversold with the rule; a stuck order says why and what to do; a long provider note stays a sentence + code; pending orders are links; one timeline line per event; 1280 and 390 px hold',
    async () => {
      // Proves each of issue 52's console answers on real orders, with the API's figures, while orders keep coming.
      const stack = await startPaymentStack();
      const browser = await launchBrowser({ width: 1280, height: 900 });
      let sale: ReturnType<typeof runSale> | undefined;
      try {
        await createSku(stack, {
          sku: 'drop',
          price: 4990,
          stock: 40,
          name: 'Limited drop: the long-named sneaker, EU 42 (numbered edition)',
        });
        await createSku(stack, { sku: 'tee', price: 1990, stock: 5 });

        // A normal PAID order: the provider's callback confirms what the pay already knew.
        const paid = await stack.buy('alice', 'tee');
        expect((await stack.pay(paid.token, paid.orderId)).body.status).toBe('PAID');
        await eventually(
          () => stack.order(paid.orderId),
          (o) => o.notifications.length === 1,
        );
        expect((await stack.order(paid.orderId)).notifications[0]?.effect).toBe('DUPLICATE');
        // A refunded order: the operator's refund is one event.
        const refunded = await stack.buy('bob', 'tee');
        expect((await stack.pay(refunded.token, refunded.orderId)).body.status).toBe('PAID');
        const refund = await stack.call('POST', `/v1/admin/orders/${refunded.orderId}/refund`, {
          token: stack.admin,
          headers: { 'idempotency-key': 'on1-refund' },
          body: { reason: 'buyer called: wrong size' },
        });
        expect(refund.body.status).toBe('REFUNDED');

        // A stuck order: the charge's answer lost, its callback held, two recovery passes refused by the provider.
        await stack.control('POST', '/_control/callbacks', { mode: 'HOLD' });
        const stuck = await stack.buy('carol', 'tee');
        await stack.control('POST', '/_control/faults', {
          op: 'charge',
          kind: 'DELAY_RESPONSE',
          merchant_order: stuck.orderId,
          ms: 1_500,
        });
        expect((await stack.pay(stuck.token, stuck.orderId)).body.status).toBe('UNKNOWN');
        for (let pass = 0; pass < 2; pass++) {
          await stack.control('POST', '/_control/faults', {
            op: 'query',
            kind: 'ERROR_500',
            merchant_order: stuck.orderId,
            times: 1,
          });
          const run = await stack.call('POST', '/v1/admin/recovery/run', {
            token: stack.admin,
            body: { stale_after_ms: staleFloorMs(stack.deps.config) },
          });
          expect(run.status).toBe(200);
        }
        await stack.control('POST', '/_control/callbacks', { mode: 'AUTO' });
        const stuckView = (await stack.call('GET', `/v1/admin/orders/${stuck.orderId}`, { token: stack.admin })).body;
        expect([stuckView.status, stuckView.recovery.attempts]).toEqual(['UNKNOWN', 2]);

        // A note for a person carrying a provider's raw JSON (planted as the decider's notes are
        // written: an UPDATE naming `attention`, whose trigger opens it for the needs-a-person list).
        const noted = await stack.buy('dave', 'tee');
        await stack.deps.db.query('UPDATE orders SET attention = $2 WHERE order_id = $1', [
          noted.orderId,
          `provider refused the capture: HTTP 400 ${RAW_JSON}`,
        ]);

        sale = runSale(stack, 'drop');
        await eventually(
          async () => sale?.placed() ?? 0,
          (n) => n >= 5,
          60_000,
        );

        const page = await browser.page();
        await signIn(page, `${stack.url}/ops`, stack.admin);
        expect(await searchOnTop(page)).toBeLessThan(200);

        // The needs-a-person table: a sentence and a code; the raw JSON one click away, not in the layout.
        const note = page.locator(`#attention tr[data-order-id="${noted.orderId}"]`);
        await expect
          .poll(() => note.locator('td.reason').textContent(), { timeout: 30_000 })
          .toContain('provider refused the capture');
        expect(await note.locator('td.reason code.code').textContent()).toBe('HTTP 400');
        expect(await note.locator('details.raw pre').isVisible()).toBe(false);
        // "CREATED" on one line (about 22 px), not one letter a line.
        const stateText = note.locator('td.state .status');
        expect((await stateText.boundingBox())?.height ?? 999).toBeLessThan(40);
        await note.locator('details.raw summary').click();
        expect(await note.locator('details.raw pre').isVisible()).toBe(true);
        expect(await note.locator('details.raw pre').textContent()).toContain('"request_log_url"');
        expect((await stateText.boundingBox())?.height ?? 999).toBeLessThan(40);

        // Reconciliation: the pending orders are links; the stuck one opens its page.
        await page.getByRole('button', { name: 'Reconcile now' }).click();
        const pendingLink = page.locator(`#mismatches tr[data-class="pending"] a[data-order-id="${stuck.orderId}"]`);
        await pendingLink.waitFor({ timeout: 30_000 });
        await shot(page, 'overview-1280');
        await pendingLink.click();

        // The stuck order says why, and what the operator can do.
        await expect.poll(() => page.locator('#detail-status').textContent()).toBe('UNKNOWN');
        expect(new URL(page.url()).pathname).toBe(`/ops/orders/${stuck.orderId}`);
        expect(await page.locator('#stuck-attempts').textContent()).toBe('2');
        expect(await page.locator('#stuck-last-error').textContent()).toMatch(/500/);
        expect(await page.locator('#stuck-last-error code.code').textContent()).toBe('HTTP 500');
        expect(await page.locator('#stuck-next-attempt').textContent()).toBe(
          new Date(stuckView.recovery.next_attempt_at).toLocaleString('en-US'),
        );
        expect(await page.locator('#stuck-hold').textContent()).not.toBe('');
        expect(await page.locator('#stuck-remedy').textContent()).toMatch(/Retry now.*Resolve by hand/);
        expect(await page.locator('#detail').textContent()).not.toMatch(/\bnull\b|undefined/);
        expect(await searchOnTop(page)).toBeLessThan(200);
        await shot(page, 'stuck-1280');

        // The refunded order: the operator's refund is one line, with the operator and the reason.
        await page.getByLabel('Search').fill(refunded.orderId);
        await page.getByRole('button', { name: 'Search', exact: true }).click();
        await page.locator(`#orders tr[data-order-id="${refunded.orderId}"] button`).click();
        await expect.poll(() => page.locator('#detail-status').textContent()).toBe('REFUNDED');
        const lines = await page.locator('#detail-timeline li').allTextContents();
        expect(lines.filter((l) => /refund/i.test(l) && /operator/.test(l))).toEqual([
          expect.stringMatching(
            /^PAID → REFUNDING: refund by operator ops of tenant-a — “buyer called: wrong size” — /,
          ),
        ]);
        expect(lines.map((l) => l.replace(/ — [^—]*$/, '').split(':')[0])).toEqual([
          'new → CREATED',
          'CREATED → PAYING',
          'PAYING → PAID',
          'PAID → REFUNDING',
          'REFUNDING → REFUNDED',
        ]);

        // The normal PAID order: its callback "confirmed (already known)", never "DUPLICATE".
        await page.getByLabel('Search').fill(paid.orderId);
        await page.getByRole('button', { name: 'Search', exact: true }).click();
        await page.locator(`#orders tr[data-order-id="${paid.orderId}"] button`).click();
        await expect.poll(() => page.locator('#detail-status').textContent()).toBe('PAID');
        expect(await page.locator('#detail').textContent()).toContain(': confirmed (already known)');
        expect(await page.locator('#detail').textContent()).not.toContain('DUPLICATE');
        expect(await page.locator('#detail-stuck').count()).toBe(0);

        // The SKU list and a SKU page while the sale runs: every figure in one screen, the rule spelt out.
        await page.getByRole('link', { name: 'SKUs' }).click();
        await expect.poll(() => page.locator('#skus tbody tr[data-sku]').count()).toBe(2);
        expect(new URL(page.url()).pathname).toBe('/ops/skus');
        expect(await page.locator('#skus tr[data-sku="tee"] td').allTextContents()).toEqual([
          'teeSKU tee',
          '5',
          '2', // available: alice's, carol's and dave's units are out, bob's refunded unit back
          '2', // held: carol's (UNKNOWN) and dave's (CREATED)
          '1', // sold: alice's
          '1', // PAID orders
          '1', // REFUNDED orders
          'no',
        ]);
        expect(await searchOnTop(page)).toBeLessThan(200);
        await shot(page, 'skus-1280');
        await page.locator('#skus tr[data-sku="drop"] a').click();
        await expect.poll(() => page.locator('#sku-title').textContent()).toContain('Limited drop');
        expect(await page.locator('#sku-oversold').textContent()).toBe('no');
        expect(await page.locator('#sku-rule').textContent()).toMatch(
          /^Why: every unit of the SKU is in one place — \d+ sold \+ \d+ held \+ 0 refunded after shipping \+ \d+ available = 40 = total 40, none below zero\./,
        );
        const skuBox = await page.locator('#sku-page').boundingBox();
        expect((skuBox?.y ?? 999) + (skuBox?.height ?? 999)).toBeLessThan(900); // one screen at 1280 × 900
        await shot(page, 'sku-1280');

        // A phone's width: nothing scrolls sideways on any page; the note still a sentence and a code.
        await page.setViewportSize({ width: 390, height: 844 });
        await expect.poll(() => sideways(page)).toBeLessThanOrEqual(390);
        await shot(page, 'sku-390');
        await page.getByRole('link', { name: 'SKUs' }).click();
        await expect.poll(() => page.locator('#skus tbody tr[data-sku]').count()).toBe(2);
        await expect.poll(() => sideways(page)).toBeLessThanOrEqual(390);
        await shot(page, 'skus-390');
        await page.goto(`${stack.url}/ops/orders/${stuck.orderId}`);
        await expect.poll(() => page.locator('#stuck-attempts').textContent()).toBe('2');
        await expect.poll(() => sideways(page)).toBeLessThanOrEqual(390);
        expect(await searchOnTop(page)).toBeLessThan(400);
        await shot(page, 'stuck-390');
        await page.locator(`#attention tr[data-order-id="${noted.orderId}"] details.raw summary`).click();
        await expect.poll(() => sideways(page)).toBeLessThanOrEqual(390);
        const phoneState = page.locator(`#attention tr[data-order-id="${noted.orderId}"] td.state .status`);
        expect((await phoneState.boundingBox())?.height ?? 999).toBeLessThan(40);
        await shot(page, 'overview-390');

        // The sale ends: the list's figures are the API's, and nothing is oversold.
        await sale.stop();
        sale = undefined;
        const api = (await stack.call('GET', '/v1/admin/skus', { token: stack.admin })).body.skus as Array<{
          sku: string;
          total: number;
          available: number;
          held: number;
          confirmed: number;
          orders: Record<string, number>;
        }>;
        const drop = api.find((s) => s.sku === 'drop');
        await page.setViewportSize({ width: 1280, height: 900 });
        await page.getByRole('link', { name: 'SKUs' }).click();
        await expect
          .poll(() => page.locator('#skus tr[data-sku="drop"] td').allTextContents())
          .toEqual([
            'dropLimited drop: the long-named sneaker, EU 42 (numbered edition)',
            '40',
            String(drop?.available),
            String(drop?.held),
            String(drop?.confirmed),
            String(drop?.orders.PAID ?? 0),
            String(drop?.orders.REFUNDED ?? 0),
            'no',
          ]);
        expect((drop?.available ?? 0) + (drop?.held ?? 0) + (drop?.confirmed ?? 0)).toBe(40);
        expect(drop?.confirmed).toBe(drop?.orders.PAID);
      } finally {
        await sale?.stop();
        await browser.close();
        await stack.close();
      }
    },
    TEST_MS,
  );

  browserIt(
    'ON-02: reconciliation lists the orders behind each mismatch class as links, and "oversold" turns from no to the class that says why',
    async () => {
      // Proves the class rows name their orders (two planted breakages) and the oversold line follows reconciliation's stock checks.
      const stack = await startPaymentStack();
      const browser = await launchBrowser({ width: 1280, height: 900 });
      try {
        await createSku(stack, { sku: 'mug', price: 990, stock: 4 });
        const clean = await stack.buy('erin', 'mug');
        expect((await stack.pay(clean.token, clean.orderId)).body.status).toBe('PAID');
        const page = await browser.page();
        await signIn(page, `${stack.url}/ops`, stack.admin);
        await stack.call('POST', '/v1/admin/outbox/drain', { token: stack.operator });
        await page.getByRole('button', { name: 'Reconcile now' }).click();
        await expect.poll(() => page.locator('#verdict').textContent(), { timeout: 30_000 }).toBe('clean');
        expect(await page.locator('#recon-oversold').textContent()).toBe('no');

        // Two breakages: a cancel that kept its unit held, and a unit confirmed for an order never paid.
        const kept = await stack.buy('frank', 'mug');
        await cancelWithoutRelease(stack.deps.db, kept.orderId, stack.clock.now());
        const sold = await stack.buy('gina', 'mug');
        await confirmAtCreate(stack.deps.db, sold.orderId, stack.clock.now());
        await stack.call('POST', '/v1/admin/outbox/drain', { token: stack.operator });
        const report = (await stack.call('GET', '/v1/admin/reconciliation', { token: stack.admin })).body as {
          mismatches: Array<{ class: string; order_id: string }>;
        };
        const classes = [...new Set(report.mismatches.map((m) => m.class))].sort();
        expect(classes).toContain('CANCELLED_BUT_RESERVATION_HELD');
        expect(classes).toContain('CONFIRMED_NE_PAID');

        await page.getByRole('button', { name: 'Reconcile now' }).click();
        await expect
          .poll(() => page.locator('#mismatches tbody tr[data-class]').count(), { timeout: 30_000 })
          .toBe(classes.length);
        // Each class row: its count and the orders it names, as links.
        for (const c of classes) {
          const ids = report.mismatches.filter((m) => m.class === c).map((m) => m.order_id);
          const row = page.locator(`#mismatches tr[data-class="${c}"]`);
          expect(await row.locator('td.num').textContent()).toBe(String(ids.length));
          expect(
            await row.locator('a[data-order-id]').evaluateAll((as) => as.map((a) => a.getAttribute('data-order-id'))),
          ).toEqual(ids.filter((id) => id));
        }
        expect(await page.locator('#recon-oversold').textContent()).toMatch(/^check: .*CONFIRMED_NE_PAID/);
        await page
          .locator(`#mismatches tr[data-class="CANCELLED_BUT_RESERVATION_HELD"] a[data-order-id="${kept.orderId}"]`)
          .click();
        await expect.poll(() => page.locator('#detail-status').textContent()).toBe('CANCELLED');
        expect(new URL(page.url()).pathname).toBe(`/ops/orders/${kept.orderId}`);
        await shot(page, 'mismatches-1280');
      } finally {
        await browser.close();
        await stack.close();
      }
    },
    TEST_MS,
  );
});
