// @ts-check
// The console's SKU list (issue 52): every SKU of the tenant with what sold, what was paid and
// refunded, and whether anything is oversold, a page at a time from `GET /v1/admin/skus`.
import { h } from './api.js';
import { oversold } from './ops.sku.js';

/**
 * @typedef {{
 *   call: (method: string, path: string, body?: unknown, key?: string) => Promise<{ ok: boolean, status: number, body: any }>,
 *   checked: (request: Promise<{ ok: boolean, status: number, body: any }>) => Promise<any>,
 *   openSku: (sku: string) => void,
 *   showPage: (id: string) => void,
 * }} Context
 */

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
/** The cursors that opened each page so far (the first is null). */
let cursors = /** @type {Array<string | null>} */ ([null]);
/** @type {string | null} */
let nextCursor = null;

/** @param {Context} ctx @param {any} s */
function row(ctx, s) {
  const check = oversold(s);
  return h(
    'tr',
    { 'data-sku': s.sku },
    h(
      'td',
      {},
      h(
        'a',
        {
          href: `/ops/skus/${encodeURIComponent(s.sku)}`,
          onclick: (/** @type {Event} */ e) => {
            e.preventDefault();
            ctx.openSku(s.sku);
          },
        },
        s.sku,
      ),
      h('span', { class: 'muted sub' }, s.name),
    ),
    h('td', { class: 'num' }, String(s.total)),
    h('td', { class: 'num' }, String(s.available)),
    h('td', { class: 'num hide-narrow' }, String(s.held)),
    h('td', { class: 'num' }, String(s.confirmed)),
    h('td', { class: 'num' }, String(s.orders.PAID ?? 0)),
    h('td', { class: 'num hide-narrow' }, String(s.orders.REFUNDED ?? 0)),
    h('td', { class: check.bad ? 'verdict-bad' : 'verdict-ok', title: check.rule }, check.bad ? 'YES' : 'no'),
  );
}

/** @param {Context} ctx */
async function load(ctx) {
  const cursor = cursors[cursors.length - 1];
  const body = await ctx.checked(ctx.call('GET', `/v1/admin/skus${cursor ? `?cursor=${cursor}` : ''}`));
  if (!body) return;
  nextCursor = body.next_cursor;
  /** @type {HTMLButtonElement} */ ($('skus-next')).disabled = !nextCursor;
  /** @type {HTMLButtonElement} */ ($('skus-first')).disabled = cursors.length === 1;
  $('skus-info').textContent = `page ${cursors.length}, ${body.skus.length} SKUs`;
  $('skus')
    .querySelector('tbody')
    ?.replaceChildren(
      ...(body.skus.length
        ? body.skus.map((/** @type {any} */ s) => row(ctx, s))
        : [h('tr', {}, h('td', { colspan: '8', class: 'muted' }, 'No SKU yet.'))]),
    );
}

/** Opens the list on its first page. @param {Context} ctx */
export async function showSkuList(ctx) {
  cursors = [null];
  ctx.showPage('sku-list');
  await load(ctx);
}

/** @param {Context} ctx */
export function wireSkuList(ctx) {
  $('skus-next').addEventListener('click', () => {
    if (!nextCursor) return;
    cursors.push(nextCursor);
    void load(ctx);
  });
  $('skus-first').addEventListener('click', () => void showSkuList(ctx));
}
