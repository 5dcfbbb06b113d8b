// @ts-check
// The console's SKU page (issue 36): counters, and price and stock changes through the admin API,
// each change sent with an Idempotency-Key kept for that intent (the same value twice is one key).
import { newKey } from './api.js';

/**
 * @typedef {{
 *   call: (method: string, path: string, body?: unknown, key?: string) => Promise<{ ok: boolean, status: number, body: any }>,
 *   checked: (request: Promise<{ ok: boolean, status: number, body: any }>) => Promise<any>,
 *   amount: (minor: number) => string,
 * }} Context
 */

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
let current = '';

function intentKey(/** @type {string} */ what) {
  const name = `flashpay.ops.sku.${what}`;
  let key = sessionStorage.getItem(name);
  if (!key) {
    key = newKey();
    sessionStorage.setItem(name, key);
  }
  return key;
}

/** @param {Context} ctx @param {string} sku */
export async function showSku(ctx, sku) {
  const s = await ctx.checked(ctx.call('GET', `/v1/admin/skus/${encodeURIComponent(sku)}`));
  if (!s) return;
  current = s.sku;
  $('detail').hidden = true;
  $('sku-page').hidden = false;
  $('sku-page').dataset.sku = s.sku;
  $('sku-title').textContent = `SKU ${s.sku} — ${s.name}`;
  $('sku-available').textContent = String(s.available);
  $('sku-held').textContent = String(s.held);
  $('sku-sold').textContent = String(s.confirmed);
  // Issue 48: out of stock, refunded, not (yet) returned to the warehouse.
  $('sku-refunded-shipped').textContent = String(s.refunded_shipped ?? 0);
  $('sku-total').textContent = String(s.total);
  $('sku-price').textContent = ctx.amount(s.price);
  $('sku-limit').textContent = s.per_user_limit === null ? 'none' : String(s.per_user_limit);
}

/** "19.9" → 1990; undefined when it is not an amount with at most two decimals. */
function minorOf(/** @type {string} */ text) {
  const m = /^(\d{1,9})(?:[.](\d{1,2}))?$/.exec(text.trim());
  return m ? Number(m[1]) * 100 + Number((m[2] ?? '').padEnd(2, '0')) : undefined;
}

/** @param {Context} ctx @param {Record<string, number>} change @param {string} what */
async function patch(ctx, change, what) {
  const sku = current;
  const key = intentKey(`${sku}.${JSON.stringify(change)}.${what}`);
  const buttons = $('sku-page').querySelectorAll('button');
  for (const b of buttons) /** @type {HTMLButtonElement} */ (b).disabled = true;
  const result = await ctx.checked(ctx.call('PATCH', `/v1/admin/skus/${encodeURIComponent(sku)}`, change, key));
  for (const b of buttons) /** @type {HTMLButtonElement} */ (b).disabled = false;
  if (!result) return;
  // The change is done: the next one of the same value is a new intent.
  sessionStorage.removeItem(`flashpay.ops.sku.${sku}.${JSON.stringify(change)}.${what}`);
  $('sku-result').textContent = `${sku}: ${what} — price ${ctx.amount(result.price)}, ${result.available} available`;
  await showSku(ctx, sku);
}

/** @param {Context} ctx */
export function wireSkuForms(ctx) {
  $('price-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const input = /** @type {HTMLInputElement} */ ($('new-price'));
    const price = minorOf(input.value);
    if (price === undefined) {
      $('sku-result').textContent = 'A price is an amount like 24.90';
      return;
    }
    void patch(ctx, { price }, `price set to ${ctx.amount(price)}`);
  });
  $('stock-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const units = Number(/** @type {HTMLInputElement} */ ($('add-stock')).value);
    if (!Number.isInteger(units) || units < 1) return;
    void patch(ctx, { add_stock: units }, `${units} units added`);
  });
}
