// @ts-check
import { api, h, money, newKey, problemText, showError } from './api.js';

// An order in one of these states is still on its way: its card polls until it leaves them.
const WAITING = new Set(['PENDING', 'PAYING', 'UNKNOWN', 'RELEASING', 'COMPENSATING', 'REFUNDING']);
const POLL_MS = 1000;

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
const errorRegion = $('error');
let token = localStorage.getItem('flashpay.buyer');
/** @type {ReturnType<typeof setTimeout> | undefined} */
let pollTimer;

/**
 * The key for an intent, kept in sessionStorage: a double click, or a refresh and a retry of the
 * same request, sends the same key, so the server answers with the first result instead of
 * acting twice. A new intent (another cart, another order) gets a new key.
 */
function keyFor(/** @type {string} */ intent) {
  const stored = sessionStorage.getItem(`flashpay.key.${intent}`);
  if (stored) return stored;
  const key = newKey();
  sessionStorage.setItem(`flashpay.key.${intent}`, key);
  return key;
}
const forgetKey = (/** @type {string} */ intent) => sessionStorage.removeItem(`flashpay.key.${intent}`);

async function signIn(/** @type {SubmitEvent} */ event) {
  event.preventDefault();
  const user = /** @type {HTMLInputElement} */ ($('user')).value;
  const tenant = /** @type {HTMLInputElement} */ ($('tenant')).value;
  const reply = await api('POST', '/v1/dev/token', { body: { user, tenant } });
  if (!reply.ok) return showError(errorRegion, problemText(reply.body, reply.status));
  token = reply.body.token;
  localStorage.setItem('flashpay.buyer', reply.body.token);
  localStorage.setItem('flashpay.buyer.name', `${user} @ ${tenant}`);
  await show();
}

function signOut() {
  localStorage.removeItem('flashpay.buyer');
  token = null;
  clearTimeout(pollTimer);
  void show();
}

async function loadCatalogue() {
  const reply = await api('GET', '/v1/skus', { token });
  if (!reply.ok) return showError(errorRegion, problemText(reply.body, reply.status));
  // While polling, only the counts change: quantities the buyer is typing stay as they are.
  const shown = [...document.querySelectorAll('#skus [data-available]')].map((td) => td.getAttribute('data-available'));
  if (shown.join('\n') === reply.body.skus.map((/** @type {any} */ s) => s.sku).join('\n') && shown.length > 0) {
    for (const s of reply.body.skus) {
      const cell = document.querySelector(`#skus [data-available="${CSS.escape(s.sku)}"]`);
      if (cell) cell.textContent = String(s.available);
    }
    return;
  }
  const rows = reply.body.skus.map((/** @type {any} */ s) =>
    h(
      'tr',
      {},
      h('th', { scope: 'row' }, s.name, h('span', { class: 'muted hide-narrow' }, ` (${s.sku})`)),
      h('td', { class: 'num' }, money(s.price)),
      h('td', { class: 'num', 'data-available': s.sku }, String(s.available)),
      h(
        'td',
        { class: 'num' },
        h('input', {
          type: 'number',
          min: '0',
          max: '1000',
          value: '0',
          name: s.sku,
          'aria-label': `Quantity of ${s.name}`,
        }),
      ),
    ),
  );
  $('skus').replaceChildren(...rows);
}

async function loadWallet() {
  const reply = await api('GET', '/v1/wallet', { token });
  $('balance').textContent = reply.ok ? money(reply.body.balance) : '—';
}

async function placeOrder(/** @type {SubmitEvent} */ event) {
  event.preventDefault();
  const button = /** @type {HTMLButtonElement} */ ($('order-button'));
  const lines = [...document.querySelectorAll('#skus input[type=number]')]
    .map((input) => ({
      sku: /** @type {HTMLInputElement} */ (input).name,
      quantity: Number(/** @type {HTMLInputElement} */ (input).value),
    }))
    .filter((l) => l.quantity > 0);
  if (lines.length === 0) return showError(errorRegion, 'Choose a quantity on at least one line.');
  const queued = /** @type {HTMLInputElement} */ ($('queued')).checked;
  const intent = `order:${queued}:${JSON.stringify(lines)}`;
  button.disabled = true;
  try {
    const reply = await api('POST', '/v1/orders', {
      token,
      body: { lines },
      key: keyFor(intent),
      headers: queued ? { prefer: 'respond-async' } : {},
    });
    // A final answer (made or refused for a business reason) ends the intent; a 5xx may be retried with the same key.
    if (reply.status < 500) forgetKey(intent);
    if (!reply.ok) return showError(errorRegion, problemText(reply.body, reply.status));
    showError(errorRegion, '');
    for (const input of document.querySelectorAll('#skus input[type=number]'))
      /** @type {HTMLInputElement} */ (input).value = '0';
    await refresh();
  } finally {
    button.disabled = false;
  }
}

async function orderAction(
  /** @type {string} */ orderId,
  /** @type {'pay' | 'wallet' | 'cancel'} */ action,
  /** @type {HTMLButtonElement} */ button,
) {
  // Every button of the card is off while one request is in flight: a double click sends once,
  // and if it did send twice, the kept key makes the second a replay.
  const buttons = /** @type {HTMLButtonElement[]} */ ([
    ...(button.closest('.actions')?.querySelectorAll('button') ?? []),
  ]);
  for (const b of buttons) b.disabled = true;
  try {
    const reply =
      action === 'cancel'
        ? await api('POST', `/v1/orders/${encodeURIComponent(orderId)}/cancel`, { token })
        : await api('POST', `/v1/orders/${encodeURIComponent(orderId)}/pay`, {
            token,
            key: keyFor(`pay:${orderId}:${action}`),
            body: { method: action === 'wallet' ? 'wallet' : 'channel' },
          });
    if (!reply.ok) showError(errorRegion, problemText(reply.body, reply.status));
    else showError(errorRegion, '');
  } finally {
    await refresh();
  }
}

function orderCard(/** @type {any} */ order) {
  const waiting = WAITING.has(order.status);
  const payable = order.status === 'CREATED';
  const card = h(
    'article',
    {
      class: 'order',
      'data-order-id': order.order_id,
      'data-status': order.status,
      'aria-label': `Order ${order.order_id}`,
    },
    h(
      'p',
      {},
      h('strong', {}, order.order_id),
      ' ',
      h('span', { class: 'status', 'data-status': order.status, 'data-waiting': waiting }, order.status),
      waiting ? h('span', { class: 'muted' }, ' waiting for the result…') : null,
    ),
    h(
      'p',
      {},
      (order.lines ?? []).map((/** @type {any} */ l) => `${l.quantity} × ${l.name}`).join(', '),
      ` — ${money(order.amount)}`,
    ),
    payable
      ? h(
          'div',
          { class: 'actions' },
          h(
            'button',
            {
              type: 'button',
              onclick: (/** @type {Event} */ e) =>
                orderAction(order.order_id, 'pay', /** @type {HTMLButtonElement} */ (e.currentTarget)),
            },
            'Pay',
          ),
          h(
            'button',
            {
              type: 'button',
              class: 'secondary',
              onclick: (/** @type {Event} */ e) =>
                orderAction(order.order_id, 'wallet', /** @type {HTMLButtonElement} */ (e.currentTarget)),
            },
            'Pay with wallet',
          ),
          h(
            'button',
            {
              type: 'button',
              class: 'secondary',
              onclick: (/** @type {Event} */ e) =>
                orderAction(order.order_id, 'cancel', /** @type {HTMLButtonElement} */ (e.currentTarget)),
            },
            'Cancel',
          ),
        )
      : null,
    h(
      'details',
      {},
      h('summary', {}, 'Timeline'),
      h(
        'ol',
        {},
        ...(order.timeline ?? []).map((/** @type {any} */ t) =>
          h('li', {}, `${t.from ?? '—'} → ${t.to}: ${t.reason} (${new Date(t.at).toLocaleTimeString()})`),
        ),
      ),
    ),
  );
  return card;
}

/** Rebuilds "my orders" from the server, and polls again while any order is still on its way. */
async function refresh() {
  clearTimeout(pollTimer);
  if (!token) return;
  const reply = await api('GET', '/v1/orders', { token });
  if (reply.status === 401) return signOut();
  if (!reply.ok) {
    showError(errorRegion, problemText(reply.body, reply.status));
  } else {
    const orders = reply.body.orders;
    // Keep open timelines open across a refresh of the list.
    const open = new Set(
      [...document.querySelectorAll('.order details[open]')].map((d) =>
        d.closest('.order')?.getAttribute('data-order-id'),
      ),
    );
    $('orders').replaceChildren(
      ...(orders.length ? orders.map(orderCard) : [h('p', { class: 'muted' }, 'No orders yet.')]),
    );
    for (const id of open)
      document.querySelector(`.order[data-order-id="${CSS.escape(id ?? '')}"] details`)?.setAttribute('open', '');
    await Promise.all([loadWallet(), loadCatalogue()]);
    if (!orders.some((/** @type {any} */ o) => WAITING.has(o.status))) return;
  }
  pollTimer = setTimeout(() => void refresh(), POLL_MS);
}

async function show() {
  $('signin').hidden = Boolean(token);
  $('shop').hidden = !token;
  $('who').textContent = token
    ? `signed in as ${localStorage.getItem('flashpay.buyer.name') ?? 'a buyer'}`
    : 'not signed in';
  if (token) await refresh();
}

$('signin-form').addEventListener('submit', (e) => void signIn(/** @type {SubmitEvent} */ (e)));
$('order-form').addEventListener('submit', (e) => void placeOrder(/** @type {SubmitEvent} */ (e)));
$('signout').addEventListener('click', signOut);
void show();
