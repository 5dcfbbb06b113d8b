// @ts-check
// The console's SKU page (issue 36; issue 52: sold, paid, refunded and oversold in one screen, the
// rule behind "oversold: no" spelled out): counters, and price and stock changes through the admin API,
// each change sent with an Idempotency-Key kept for that intent (the same value twice is one key).
import { h, newKey } from './api.js';

/**
 * @typedef {{
 *   call: (method: string, path: string, body?: unknown, key?: string) => Promise<{ ok: boolean, status: number, body: any }>,
 *   checked: (request: Promise<{ ok: boolean, status: number, body: any }>) => Promise<any>,
 *   amount: (minor: number) => string,
 *   showPage: (id: string) => void,
 *   searchFor: (filters: { q?: string, sku?: string, state?: string }) => void,
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

/**
 * Whether a SKU's counters show more units out than it has, and the rule behind the answer in
 * words: the units a SKU has are all somewhere (on sale, held, sold, refunded after shipping), so
 * "not oversold" is that sum equal to the total with nothing below zero. The database keeps it so:
 * a sale is a conditional decrement of `available` (a CHECK refuses below 0).
 * @param {any} s the admin SKU view
 */
export function oversold(s) {
  const out = s.held + s.confirmed + (s.refunded_shipped ?? 0);
  const sum = s.available + out;
  const bad = s.available < 0 || s.held < 0 || s.confirmed < 0 || sum !== s.total || out > s.total;
  const rule = `${s.confirmed} sold + ${s.held} held + ${s.refunded_shipped ?? 0} refunded after shipping + ${s.available} available = ${sum}${sum === s.total ? ' = ' : ' ≠ '}total ${s.total}, none below zero`;
  return { bad, rule };
}

/** @param {Context} ctx @param {string} sku */
export async function showSku(ctx, sku) {
  const path = `/v1/admin/skus/${encodeURIComponent(sku)}`;
  const [s, outcomes] = await Promise.all([
    ctx.checked(ctx.call('GET', path)),
    ctx.checked(ctx.call('GET', `${path}/outcomes`)),
  ]);
  if (!s || !outcomes) return;
  current = s.sku;
  ctx.showPage('sku-page');
  $('sku-page').dataset.sku = s.sku;
  $('sku-title').textContent = `SKU ${s.sku} — ${s.name}`;
  /** @type {Record<string, number>} */
  const orders = outcomes.statuses ?? {};
  $('sku-sold').textContent = String(s.confirmed);
  $('sku-paid').textContent = String(orders.PAID ?? 0);
  $('sku-refunded').textContent = String(orders.REFUNDED ?? 0);
  const check = oversold(s);
  const verdict = $('sku-oversold');
  verdict.textContent = check.bad ? 'YES — the counters do not add up' : 'no';
  verdict.className = check.bad ? 'verdict-bad' : 'verdict-ok';
  $('sku-rule').textContent =
    `Why: every unit of the SKU is in one place — ${check.rule}. A sale takes a unit only while one is available (the database refuses a count below zero), so no unit is sold twice. Reconciliation also checks that the sold units equal the PAID orders' units (CONFIRMED_NE_PAID).`;
  $('sku-available').textContent = String(s.available);
  $('sku-held').textContent = String(s.held);
  // Issue 48: out of stock, refunded, not (yet) returned to the warehouse.
  $('sku-refunded-shipped').textContent = String(s.refunded_shipped ?? 0);
  $('sku-released').textContent = String(s.released ?? 0);
  $('sku-total').textContent = String(s.total);
  $('sku-price').textContent = ctx.amount(s.price);
  $('sku-limit').textContent = s.per_user_limit === null ? 'none' : String(s.per_user_limit);
  // The orders behind the figures, one search away.
  const links = Object.entries(orders).map(([status, n]) =>
    h(
      'a',
      {
        href: `/ops?sku=${encodeURIComponent(s.sku)}&state=${status}`,
        'data-state': status,
        onclick: (/** @type {Event} */ e) => {
          e.preventDefault();
          ctx.searchFor({ sku: s.sku, state: status });
        },
      },
      `${n} ${status}`,
    ),
  );
  $('sku-orders').replaceChildren(
    'Orders: ',
    ...(links.length ? links.flatMap((a, i) => (i ? [' · ', a] : [a])) : ['none yet']),
  );
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
