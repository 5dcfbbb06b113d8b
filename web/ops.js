// @ts-check
import { api, h, money, problemText, showError } from './api.js';
import { showOrder as openOrder } from './ops.order.js';
import { showSku as openSkuPage, wireSkuForms } from './ops.sku.js';
import { showSkuList, wireSkuList } from './ops.skus.js';
import { noteView } from './ops.notes.js';

const STATES = [
  'PENDING',
  'CREATED',
  'REJECTED',
  'PAYING',
  'UNKNOWN',
  'PAID',
  'FAILED',
  'RELEASING',
  'CANCELLED',
  'REFUNDING',
  'REFUNDED',
  'COMPENSATING',
  'COMPENSATION_PENDING',
  'COMPENSATED',
];
const TICK_MS = 1000;
// The chart keeps two minutes of one-second points.
const CHART_POINTS = 120;

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
const errorRegion = $('error');
let token = localStorage.getItem('flashpay.admin');
let ticks = 0;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let timer;
/** @type {{ atMs: number, total: number, paid: number, failed: number } | undefined} */
let previous;
/** @type {any} */
let chart;

const call = (
  /** @type {string} */ method,
  /** @type {string} */ path,
  /** @type {unknown} */ body = undefined,
  /** @type {string | undefined} */ key = undefined,
) => api(method, path, { token, body, ...(key ? { key } : {}) });

// Amounts are minor units in the API; the console shows major units in the page's currency.
const CURRENCY = document.documentElement.dataset.currency ?? 'EUR';
const amount = (/** @type {number} */ minor) => `${money(minor)} ${CURRENCY}`;
/** The search's pages: the cursors that opened each page so far (the first is null). */
let cursors = /** @type {Array<string | null>} */ ([null]);
/** @type {string | null} */
let nextCursor = null;

async function checked(/** @type {Promise<{ ok: boolean, status: number, body: any }>} */ request) {
  const reply = await request;
  if (reply.status === 401) {
    forget();
    showError(errorRegion, problemText(reply.body, reply.status));
    return undefined;
  }
  if (!reply.ok) {
    showError(errorRegion, problemText(reply.body, reply.status));
    return undefined;
  }
  return reply.body;
}

function makeChart() {
  const Chart = /** @type {any} */ (window).Chart;
  if (!Chart || chart) return;
  const canvas = /** @type {HTMLCanvasElement} */ ($('chart'));
  chart = new Chart(canvas, {
    type: 'line',
    data: {
      labels: [],
      datasets: [
        { label: 'orders/s', data: [], borderColor: '#0b4fa8', pointRadius: 0, tension: 0.2 },
        { label: 'PAID/s', data: [], borderColor: '#125c1f', pointRadius: 0, tension: 0.2 },
        { label: 'FAILED/s', data: [], borderColor: '#8a1010', pointRadius: 0, tension: 0.2 },
      ],
    },
    options: {
      animation: false,
      responsive: true,
      maintainAspectRatio: false,
      scales: { y: { beginAtZero: true, title: { display: true, text: 'per second' } } },
    },
  });
}

/** Orders/s and pay outcomes/s as differences of the database's counts between two ticks. */
function plot(/** @type {any} */ summary) {
  const now = {
    atMs: Date.now(),
    total: summary.total,
    paid: summary.counts.PAID ?? 0,
    failed: summary.counts.FAILED ?? 0,
  };
  const last = previous;
  previous = now;
  if (!last || !chart) return;
  const seconds = Math.max(0.001, (now.atMs - last.atMs) / 1000);
  const values = [now.total - last.total, now.paid - last.paid, now.failed - last.failed].map(
    (d) => Math.max(0, d) / seconds,
  );
  chart.data.labels.push(new Date(now.atMs).toLocaleTimeString());
  values.forEach((v, i) => chart.data.datasets[i].data.push(Number(v.toFixed(2))));
  if (chart.data.labels.length > CHART_POINTS) {
    chart.data.labels.shift();
    for (const d of chart.data.datasets) d.data.shift();
  }
  chart.update('none');
  const box = $('chart-box');
  box.dataset.points = String(chart.data.labels.length);
  box.dataset.ordersSeen = String(Number(box.dataset.ordersSeen ?? 0) + Math.max(0, now.total - last.total));
}

async function loadSummary() {
  const summary = await checked(call('GET', '/v1/admin/console/summary'));
  if (!summary) return;
  const rows = STATES.filter((s) => summary.counts[s] !== undefined).map((s) =>
    h(
      'tr',
      { 'data-state': s },
      h('th', { scope: 'row' }, h('button', { type: 'button', class: 'secondary', onclick: () => filterBy(s) }, s)),
      h('td', { class: 'num', 'data-count': s }, String(summary.counts[s])),
    ),
  );
  $('counts')
    .querySelector('tbody')
    ?.replaceChildren(...rows);
  $('total').textContent = String(summary.total);
  $('outbox-pending').textContent = String(summary.outbox.pending);
  $('outbox-lag').textContent = (summary.outbox.oldest_pending_ms / 1000).toFixed(1);
  $('outbox-dead').textContent = String(summary.outbox.dead);
  plot(summary);
}

async function loadAttention() {
  const body = await checked(call('GET', '/v1/admin/attention'));
  if (!body) return;
  const rows = body.orders.map((/** @type {any} */ o) =>
    h(
      'tr',
      { 'data-order-id': o.order_id },
      h(
        'td',
        {},
        h('button', { type: 'button', class: 'secondary', onclick: () => void showOrder(o.order_id) }, o.order_id),
      ),
      h('td', { class: 'state' }, h('span', { class: 'status', 'data-status': o.status }, o.status)),
      h('td', { class: 'reason' }, noteView(o.reason)),
      h('td', { class: 'hide-narrow' }, `${new Date(o.since).toLocaleString()} · ${o.attempts} attempts`),
      h(
        'td',
        {},
        h(
          'button',
          {
            type: 'button',
            'aria-label': `Retry ${o.order_id} now`,
            onclick: (/** @type {Event} */ e) =>
              void retry(o.order_id, /** @type {HTMLButtonElement} */ (e.currentTarget)),
          },
          'Retry now',
        ),
      ),
    ),
  );
  $('attention')
    .querySelector('tbody')
    ?.replaceChildren(
      ...(rows.length ? rows : [h('tr', {}, h('td', { colspan: '5', class: 'muted' }, 'Nothing needs a person.'))]),
    );
}

async function retry(/** @type {string} */ orderId, /** @type {HTMLButtonElement} */ button) {
  button.disabled = true;
  const result = await checked(call('POST', `/v1/admin/orders/${encodeURIComponent(orderId)}/retry`));
  if (result)
    $('attention-result').textContent =
      `${orderId}: ${result.status}${result.attention ? ` — still: ${result.attention}` : ' — converged'}`;
  await Promise.all([loadAttention(), loadSummary(), showOrder(orderId)]);
}

async function loadDead() {
  const body = await checked(call('GET', '/v1/admin/outbox/dead'));
  if (!body) return;
  $('dead-events').replaceChildren(
    ...body.events
      .slice(0, 20)
      .map((/** @type {any} */ e) => h('li', {}, `${e.event_id} ${e.event_type} ${e.order_id}: ${e.last_error ?? ''}`)),
  );
}

async function redrive() {
  const body = await checked(call('POST', '/v1/admin/outbox/dead/redrive', {}));
  if (body) $('attention-result').textContent = `re-drove ${body.redriven} dead events`;
  await Promise.all([loadDead(), loadSummary()]);
}

async function loadReconciliation() {
  const report = await checked(call('GET', '/v1/admin/reconciliation'));
  if (!report) return;
  const verdict = $('verdict');
  verdict.textContent = report.ok ? 'clean' : `${report.mismatches.length} mismatches, ${report.pending} pending`;
  verdict.className = report.ok ? 'verdict-ok' : 'verdict-bad';
  $('recon-unit').textContent = CURRENCY;
  $('channel-net').textContent = money(report.totals.channel_net);
  $('wallet-net').textContent = money(report.totals.wallet_net ?? 0);
  $('paid-sum').textContent = money(report.totals.paid_sum);
  $('drift').textContent = money(report.totals.drift);
  // "Oversold: no" is two of reconciliation's global checks finding nothing, said in words.
  const stockClasses = report.mismatches.filter((/** @type {any} */ m) =>
    ['STOCK_NOT_CONSERVED', 'CONFIRMED_NE_PAID', 'SHIPPED_UNITS_EXCEED_TOTAL'].includes(m.class),
  );
  const over = $('recon-oversold');
  over.textContent = stockClasses.length
    ? `check: ${stockClasses.map((/** @type {any} */ m) => m.class).join(', ')}`
    : 'no';
  over.className = stockClasses.length ? 'verdict-bad' : 'verdict-ok';
  $('recon-oversold-rule').textContent =
    'Oversold: no means every SKU’s units add up (sold + held + refunded after shipping + available = total, none below zero: STOCK_NOT_CONSERVED) and the sold units are exactly the PAID orders’ units (CONFIRMED_NE_PAID).';
  // Issue 52: the orders behind each class and behind "pending", each a link to its order page.
  /** @type {Map<string, string[]>} */
  const byClass = new Map();
  for (const m of report.mismatches) byClass.set(m.class, [...(byClass.get(m.class) ?? []), m.order_id]);
  const rows = [...byClass].map(([c, ids]) =>
    h(
      'tr',
      { 'data-class': c },
      h('td', {}, h('code', { class: 'code' }, c)),
      h('td', { class: 'num' }, String(ids.length)),
      h('td', { class: 'links' }, ...orderLinks(ids)),
    ),
  );
  if (report.pending > 0)
    rows.push(
      h(
        'tr',
        { 'data-class': 'pending' },
        h('td', {}, 'pending (still converging, not judged)'),
        h('td', { class: 'num' }, String(report.pending)),
        h('td', { class: 'links' }, ...orderLinks(report.pending_orders.map((/** @type {any} */ p) => p.order_id))),
      ),
    );
  $('mismatches')
    .querySelector('tbody')
    ?.replaceChildren(
      ...(rows.length
        ? rows
        : [h('tr', {}, h('td', { colspan: '3', class: 'muted' }, 'No mismatch, nothing pending.'))]),
    );
}

// A class can name many orders: the first ones as links, then how many more (search finds them).
const LINKS_SHOWN = 20;

/** Order ids as links to their order pages (a global check names no order: shown as such). */
function orderLinks(/** @type {string[]} */ ids) {
  const real = ids.filter((id) => id);
  const links = real.slice(0, LINKS_SHOWN).map((id) =>
    h(
      'a',
      {
        href: `/ops/orders/${encodeURIComponent(id)}`,
        'data-order-id': id,
        onclick: (/** @type {Event} */ e) => {
          e.preventDefault();
          void showOrder(id);
        },
      },
      id,
    ),
  );
  /** @type {Array<Node | string>} */
  const parts = links.flatMap((a, i) => (i ? [' ', a] : [a]));
  if (real.length > LINKS_SHOWN) parts.push(` and ${real.length - LINKS_SHOWN} more`);
  if (real.length < ids.length)
    parts.push(real.length ? ' · a check of the whole ledger' : 'a check of the whole ledger');
  return parts;
}

/** The search as the form says it, on the page the cursor names. */
function searchPath(/** @type {string | null} */ cursor) {
  const params = new URLSearchParams();
  const q = /** @type {HTMLInputElement} */ ($('q')).value.trim();
  const state = /** @type {HTMLSelectElement} */ ($('state-filter')).value;
  const sku = /** @type {HTMLInputElement} */ ($('sku-filter')).value.trim();
  if (q) params.set('q', q);
  if (state) params.set('state', state);
  if (sku) params.set('sku', sku);
  if (cursor) params.set('cursor', cursor);
  const query = params.toString();
  return `/v1/admin/orders${query ? `?${query}` : ''}`;
}

/** Reloads the current page of the search (the refresh keeps the page the person is on). */
async function loadOrders() {
  const body = await checked(call('GET', searchPath(cursors[cursors.length - 1] ?? null)));
  if (!body) return;
  nextCursor = body.next_cursor;
  /** @type {HTMLButtonElement} */ ($('next-page')).disabled = !nextCursor;
  /** @type {HTMLButtonElement} */ ($('first-page')).disabled = cursors.length === 1;
  $('page-info').textContent = `page ${cursors.length}, ${body.orders.length} orders`;
  $('orders')
    .querySelector('tbody')
    ?.replaceChildren(
      ...(body.orders.length
        ? body.orders.map((/** @type {any} */ o) =>
            h(
              'tr',
              { 'data-order-id': o.order_id },
              h(
                'td',
                {},
                h(
                  'button',
                  { type: 'button', class: 'secondary', onclick: () => void showOrder(o.order_id) },
                  o.order_id,
                ),
              ),
              h('td', {}, o.user_id),
              h('td', {}, o.status),
              h('td', { class: 'hide-narrow' }, o.sku),
              h('td', { class: 'num' }, amount(o.amount)),
              h('td', { class: 'hide-narrow' }, new Date(o.created_at).toLocaleString()),
            ),
          )
        : [h('tr', {}, h('td', { colspan: '6', class: 'muted' }, 'No order matches.'))]),
    );
}

function search() {
  cursors = [null];
  void loadOrders();
}

function filterBy(/** @type {string} */ state) {
  /** @type {HTMLSelectElement} */ ($('state-filter')).value = state;
  search();
}

/** What ops.order.js and ops.sku.js need from the page. */
const context = {
  call,
  checked,
  amount,
  openSku: (/** @type {string} */ sku) => void showSku(sku),
  changed: () => void Promise.all([loadSummary(), loadAttention(), loadOrders()]),
  showPage,
  searchFor,
};

const PAGES = ['detail', 'sku-page', 'sku-list'];

/** Shows one page (an order, a SKU, the SKU list) under the search; null: the overview alone. */
function showPage(/** @type {string | null} */ id) {
  for (const page of PAGES) $(page).hidden = page !== id;
}

/** A search from elsewhere (a SKU's order counts): fills the form, runs it and shows the results. */
function searchFor(/** @type {{ q?: string, sku?: string, state?: string }} */ filters) {
  /** @type {HTMLInputElement} */ ($('q')).value = filters.q ?? '';
  /** @type {HTMLInputElement} */ ($('sku-filter')).value = filters.sku ?? '';
  /** @type {HTMLSelectElement} */ ($('state-filter')).value = filters.state ?? '';
  search();
  $('orders-title').scrollIntoView();
}

async function openSkuList() {
  history.replaceState(null, '', '/ops/skus');
  await showSkuList(context);
  $('skus-title').focus();
}

/** Opens an order and puts its deep link in the address bar (/ops/orders/{id}). */
async function showOrder(/** @type {string} */ orderId) {
  history.replaceState(null, '', `/ops/orders/${encodeURIComponent(orderId)}`);
  await openOrder(context, orderId);
  $('detail-title').focus();
}

async function showSku(/** @type {string} */ sku) {
  history.replaceState(null, '', `/ops/skus/${encodeURIComponent(sku)}`);
  await openSkuPage(context, sku);
  $('sku-title').focus();
}

/** A deep link (/ops/orders/{id}, /ops/skus/{sku}) opens its order or SKU once signed in. */
function openDeepLink() {
  const order = /^\/ops\/orders\/([^/]+)$/.exec(location.pathname);
  const sku = /^\/ops\/skus\/([^/]+)$/.exec(location.pathname);
  if (order?.[1]) void showOrder(decodeURIComponent(order[1]));
  else if (sku?.[1]) void showSku(decodeURIComponent(sku[1]));
  else if (location.pathname === '/ops/skus') void openSkuList();
}

async function tick() {
  clearTimeout(timer);
  if (!token) return;
  makeChart();
  await loadSummary();
  if (ticks % 2 === 0) await loadAttention();
  if (ticks % 3 === 0) await Promise.all([loadDead(), loadOrders()]);
  // The open order follows its state (a refund's answer, recovery) without a click.
  const open = $('detail').hidden ? undefined : $('detail').dataset.orderId;
  if (open && ticks % 3 === 1) await openOrder(context, open);
  // Reconciliation asks the provider for its statement: every 15 s, or on the button.
  if (ticks % 15 === 0) await loadReconciliation();
  ticks += 1;
  if (token) timer = setTimeout(() => void tick(), TICK_MS);
}

function forget() {
  localStorage.removeItem('flashpay.admin');
  token = null;
  clearTimeout(timer);
  show();
}

function show() {
  $('signin').hidden = Boolean(token);
  $('console').hidden = !token;
  $('who').textContent = token ? 'admin token loaded' : 'no admin token';
  if (token) {
    void tick();
    openDeepLink();
  }
}

// `flashpay token --console` puts a short-lived token in the URL's fragment (never sent to a
// server): take it, then drop it from the address bar and the history.
const fragment = new URLSearchParams(location.hash.slice(1)).get('token');
if (fragment) {
  localStorage.setItem('flashpay.admin', fragment);
  token = fragment;
  history.replaceState(null, '', location.pathname);
}

$('signin-form').addEventListener('submit', (e) => {
  e.preventDefault();
  token = /** @type {HTMLInputElement} */ ($('admin-token')).value.trim();
  localStorage.setItem('flashpay.admin', token);
  ticks = 0;
  show();
});
$('signout').addEventListener('click', forget);
$('redrive').addEventListener('click', () => void redrive());
$('reconcile').addEventListener('click', () => void loadReconciliation());
$('state-filter').addEventListener('change', search);
$('search-form').addEventListener('submit', (e) => {
  e.preventDefault();
  // The results come right under the search: an open order or SKU page steps aside.
  showPage(null);
  search();
});
$('next-page').addEventListener('click', () => {
  if (!nextCursor) return;
  cursors.push(nextCursor);
  void loadOrders();
});
$('first-page').addEventListener('click', search);
wireSkuForms(context);
wireSkuList(context);
$('nav-skus').addEventListener('click', (e) => {
  e.preventDefault();
  void openSkuList();
});
$('nav-overview').addEventListener('click', (e) => {
  e.preventDefault();
  history.replaceState(null, '', '/ops');
  showPage(null);
  window.scrollTo(0, 0);
});
$('state-filter').append(...STATES.map((s) => h('option', { value: s }, s)));
show();
