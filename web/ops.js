// @ts-check
import { api, h, money, problemText, showError } from './api.js';

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

const call = (/** @type {string} */ method, /** @type {string} */ path, /** @type {unknown} */ body) =>
  api(method, path, { token, body });

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
      h('td', {}, o.status),
      h('td', {}, o.reason),
      h('td', { class: 'hide-narrow' }, new Date(o.since).toLocaleString()),
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
  $('channel-net').textContent = money(report.totals.channel_net);
  $('paid-sum').textContent = money(report.totals.paid_sum);
  $('drift').textContent = String(report.totals.drift);
  /** @type {Record<string, number>} */
  const byClass = {};
  for (const m of report.mismatches) byClass[m.class] = (byClass[m.class] ?? 0) + 1;
  const rows = Object.entries(byClass).map(([c, n]) =>
    h('tr', { 'data-class': c }, h('td', {}, c), h('td', { class: 'num' }, String(n))),
  );
  $('mismatches')
    .querySelector('tbody')
    ?.replaceChildren(
      ...(rows.length ? rows : [h('tr', {}, h('td', { colspan: '2', class: 'muted' }, 'No mismatch.'))]),
    );
}

async function loadOrders() {
  const state = /** @type {HTMLSelectElement} */ ($('state-filter')).value;
  const body = await checked(call('GET', `/v1/admin/orders${state ? `?status=${encodeURIComponent(state)}` : ''}`));
  if (!body) return;
  $('orders')
    .querySelector('tbody')
    ?.replaceChildren(
      ...body.orders.map((/** @type {any} */ o) =>
        h(
          'tr',
          {},
          h(
            'td',
            {},
            h('button', { type: 'button', class: 'secondary', onclick: () => void showOrder(o.order_id) }, o.order_id),
          ),
          h('td', {}, o.user_id),
          h('td', {}, o.status),
          h('td', { class: 'num' }, money(o.amount)),
          h('td', { class: 'hide-narrow' }, new Date(o.updated_at).toLocaleString()),
        ),
      ),
    );
}

function filterBy(/** @type {string} */ state) {
  /** @type {HTMLSelectElement} */ ($('state-filter')).value = state;
  void loadOrders();
}

async function showOrder(/** @type {string} */ orderId) {
  const o = await checked(call('GET', `/v1/admin/orders/${encodeURIComponent(orderId)}`));
  if (!o) return;
  const list = (/** @type {string} */ title, /** @type {any[]} */ items, /** @type {(x: any) => string} */ line) =>
    h(
      'div',
      {},
      h('h3', {}, title),
      items.length ? h('ol', {}, ...items.map((x) => h('li', {}, line(x)))) : h('p', { class: 'muted' }, 'none'),
    );
  $('detail').hidden = false;
  $('detail-title').textContent = `Order ${o.order_id}`;
  $('detail-body').replaceChildren(
    h(
      'p',
      {},
      'State ',
      h('span', { class: 'status', 'data-status': o.status, id: 'detail-status' }, o.status),
      ` · buyer ${o.user_id} · ${money(o.amount)} · fulfilment ${o.fulfilment?.status ?? '—'}`,
    ),
    o.attention ? h('p', { class: 'verdict-bad' }, `Needs a person: ${o.attention}`) : null,
    list('Timeline', o.timeline, (t) => `${t.from ?? '—'} → ${t.to}: ${t.reason} (${new Date(t.at).toLocaleString()})`),
    list('Notifications', o.notifications, (n) => `${n.kind} ${n.notify_id}: ${n.effect}`),
    list('Journal', o.journal ?? [], (j) => `${j.step} ${j.direction} ${j.status} (${j.key})`),
  );
}

async function tick() {
  clearTimeout(timer);
  if (!token) return;
  makeChart();
  await loadSummary();
  if (ticks % 2 === 0) await loadAttention();
  if (ticks % 3 === 0) await Promise.all([loadDead(), loadOrders()]);
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
  if (token) void tick();
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
$('state-filter').addEventListener('change', () => void loadOrders());
$('state-filter').append(...STATES.map((s) => h('option', { value: s }, s)));
show();
