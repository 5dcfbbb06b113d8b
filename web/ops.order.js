// @ts-check
// The console's order view and its actions (issue 36): refund, cancel, retry now, acknowledge.
// Each action asks for a confirmation naming the order and its amount, then sends its own
// Idempotency-Key, kept per (action, order, version) in sessionStorage: a second click or a retry
// after a lost answer sends the same key, and the server replays instead of acting twice.
import { h, newKey } from './api.js';

/**
 * @typedef {{
 *   call: (method: string, path: string, body?: unknown, key?: string) => Promise<{ ok: boolean, status: number, body: any }>,
 *   checked: (request: Promise<{ ok: boolean, status: number, body: any }>) => Promise<any>,
 *   amount: (minor: number) => string,
 *   openSku: (sku: string) => void,
 *   changed: () => void,
 * }} Context
 */

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
const orNone = (/** @type {unknown} */ v) => (v === null || v === undefined || v === '' ? '—' : String(v));
const when = (/** @type {string | null | undefined} */ at) => (at ? new Date(at).toLocaleString() : '—');

/** The key of one intent: the same action on the same order at the same version. */
function intentKey(/** @type {string} */ action, /** @type {string} */ orderId, /** @type {number} */ version) {
  const name = `flashpay.ops.${action}.${orderId}.${version}`;
  let key = sessionStorage.getItem(name);
  if (!key) {
    key = newKey();
    sessionStorage.setItem(name, key);
  }
  return key;
}

/**
 * Resolves true when the person confirms in the modal dialog (Esc or "Go back": false). With
 * `resolving`, the dialog also asks for the outcome and the receipt (required); with `reasoning`
 * (a refund, a cancel, a return: issue 48), for the reason the audit trail keeps (required).
 */
function confirmed(/** @type {string} */ text, /** @type {string} */ yes, resolving = false, reasoning = false) {
  const dialog = /** @type {HTMLDialogElement} */ ($('confirm'));
  const fields = /** @type {HTMLFieldSetElement} */ ($('resolve-fields'));
  fields.hidden = !resolving;
  fields.disabled = !resolving;
  /** @type {HTMLInputElement} */ ($('resolve-receipt')).value = '';
  const why = /** @type {HTMLFieldSetElement} */ ($('reason-fields'));
  why.hidden = !reasoning;
  why.disabled = !reasoning;
  /** @type {HTMLTextAreaElement} */ ($('confirm-reason')).value = '';
  $('confirm-text').textContent = text;
  $('confirm-yes').textContent = yes;
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => resolve(dialog.returnValue === 'yes'), { once: true });
    dialog.returnValue = '';
    dialog.showModal();
  });
}

/** The reason typed in the dialog, as the body of a refund, cancel or return. */
const reasonBody = () => ({ reason: /** @type {HTMLTextAreaElement} */ ($('confirm-reason')).value.trim() });

/**
 * @param {Context} ctx
 * @param {any} o the admin order view
 */
function actionsOf(ctx, o) {
  const amount = ctx.amount(o.amount);
  const id = o.order_id;
  const path = (/** @type {string} */ verb) => `/v1/admin/orders/${encodeURIComponent(id)}/${verb}`;
  /** @type {Array<{ label: string, ask: string, yes: string, run: () => Promise<any>, resolving?: boolean, reasoning?: boolean }>} */
  const list = [];
  if (o.status === 'PAID')
    list.push({
      label: 'Refund',
      ask:
        o.fulfilment?.status === 'FULFILLED'
          ? `Refund order ${id} of ${amount} to ${o.user_id} through the provider? It was shipped: its units stay out of stock until you return them.`
          : `Refund order ${id} of ${amount} to ${o.user_id} through the provider? Its units go back on sale.`,
      yes: `Refund ${amount}`,
      reasoning: true,
      run: () => ctx.checked(ctx.call('POST', path('refund'), reasonBody(), intentKey('refund', id, o.version))),
    });
  if (o.status === 'CREATED')
    list.push({
      label: 'Cancel order',
      ask: `Cancel unpaid order ${id} of ${amount} for ${o.user_id}? Its held units go back on sale.`,
      yes: `Cancel order of ${amount}`,
      reasoning: true,
      run: () => ctx.checked(ctx.call('POST', path('cancel'), reasonBody(), intentKey('cancel', id, o.version))),
    });
  // Issue 48: a refund of a shipped order keeps its units out of stock until they come back.
  const shippedBack = (o.reservations ?? [o.reservation]).some(
    (/** @type {any} */ r) => r?.status === 'REFUNDED_SHIPPED',
  );
  if (shippedBack)
    list.push({
      label: 'Return to stock',
      ask: `Order ${id} of ${amount} was refunded after it shipped: are its units back in the warehouse? They go back on sale.`,
      yes: 'Return to stock',
      reasoning: true,
      run: () => ctx.checked(ctx.call('POST', path('return'), reasonBody(), intentKey('return', id, o.version))),
    });
  if (o.attention || ['PAYING', 'UNKNOWN', 'REFUNDING'].includes(o.status))
    list.push({
      label: 'Retry now',
      ask: `Run recovery now for order ${id} of ${amount} (${o.status})?`,
      yes: 'Retry now',
      run: () => ctx.checked(ctx.call('POST', path('retry'))),
    });
  if (o.status === 'UNKNOWN')
    list.push({
      label: 'Resolve by hand',
      ask: `Resolve order ${id} of ${amount} for ${o.user_id} from what the provider's own records show? Reconciliation still checks it against the provider's statement.`,
      yes: 'Resolve',
      resolving: true,
      run: () => {
        const body = {
          outcome: /** @type {HTMLSelectElement} */ ($('resolve-outcome')).value,
          receipt: /** @type {HTMLInputElement} */ ($('resolve-receipt')).value.trim(),
        };
        // The key follows the finding: the same finding twice is one resolution.
        const keyName = `resolve.${body.outcome}.${body.receipt}`;
        return ctx.checked(ctx.call('POST', path('resolve'), body, intentKey(keyName, id, o.version)));
      },
    });
  if (o.attention)
    list.push({
      label: 'Acknowledge',
      ask: `Acknowledge the note on order ${id} of ${amount}: “${o.attention}”?`,
      yes: 'Acknowledge',
      run: () => ctx.checked(ctx.call('POST', `/v1/admin/attention/${encodeURIComponent(id)}/ack`)),
    });
  return list;
}

/**
 * Shows one order: its state, lines, timeline (operators' actions with their names), notifications,
 * saga journal and the actions its state allows. Never prints a literal null.
 * @param {Context} ctx
 * @param {string} orderId
 */
export async function showOrder(ctx, orderId) {
  const o = await ctx.checked(ctx.call('GET', `/v1/admin/orders/${encodeURIComponent(orderId)}`));
  if (!o) return;
  const list = (/** @type {string} */ title, /** @type {any[]} */ items, /** @type {(x: any) => string} */ line) =>
    h(
      'div',
      {},
      h('h3', {}, title),
      items.length ? h('ol', {}, ...items.map((x) => h('li', {}, line(x)))) : h('p', { class: 'muted' }, 'none'),
    );
  $('sku-page').hidden = true;
  $('detail').hidden = false;
  $('detail').dataset.orderId = o.order_id;
  $('detail-title').textContent = `Order ${o.order_id}`;
  const parts = [
    h(
      'p',
      {},
      'State ',
      h('span', { class: 'status', 'data-status': o.status, id: 'detail-status' }, o.status),
      ` · buyer ${orNone(o.user_id)} · `,
      h('span', { id: 'detail-amount' }, ctx.amount(o.amount)),
      ` · fulfilment ${orNone(o.fulfilment?.status)} · created ${when(o.created_at)}`,
    ),
    // Where the money is (issue 48): the provider the pay went to and its own id of the payment.
    h(
      'p',
      { id: 'detail-payment' },
      `Payment at ${orNone(o.payment?.provider)} · provider payment id `,
      h('code', {}, orNone(o.payment?.provider_payment_id)),
    ),
    o.attention ? h('p', { class: 'verdict-bad' }, `Needs a person: ${o.attention}`) : null,
    list('Lines', o.lines ?? [], (l) => `${l.quantity} × ${l.name} (${l.sku}) at ${ctx.amount(l.unit_price)}`),
    h(
      'p',
      {},
      'SKU page: ',
      h(
        'a',
        {
          href: `/ops/skus/${encodeURIComponent(o.sku)}`,
          onclick: (/** @type {Event} */ e) => {
            e.preventDefault();
            ctx.openSku(o.sku);
          },
        },
        o.sku,
      ),
    ),
    list('Timeline', o.timeline, (t) =>
      t.action
        ? `${t.action} by operator ${t.operator}${t.operator_tenant ? ` of ${t.operator_tenant}` : ''} (${t.to}${t.action === 'ack' ? `: ${t.reason.replace(/^ack: /, '')}` : ''})${t.operator_reason ? ` — “${t.operator_reason}”` : ''} — ${when(t.at)}`
        : `${t.from ?? 'new'} → ${t.to}: ${t.reason} — ${when(t.at)}`,
    ),
    list(
      'Notifications',
      o.notifications,
      (n) => `${orNone(n.provider)} ${n.kind} ${n.notify_id} ${orNone(n.txn)}: ${n.effect}`,
    ),
    list('Journal', o.journal ?? [], (j) => `${j.step} ${j.direction} ${j.status} (${j.key})`),
  ];
  // replaceChildren would print a null child as the text "null": only the parts that exist.
  $('detail-body').replaceChildren(...parts.filter((p) => p !== null));
  const buttons = actionsOf(ctx, o).map((a) =>
    h(
      'button',
      {
        type: 'button',
        'aria-label': `${a.label} ${o.order_id}`,
        onclick: (/** @type {Event} */ e) => void act(ctx, o, a, /** @type {HTMLButtonElement} */ (e.currentTarget)),
      },
      a.label,
    ),
  );
  $('detail-actions').replaceChildren(...buttons);
}

/**
 * @param {Context} ctx
 * @param {any} o
 * @param {{ label: string, ask: string, yes: string, run: () => Promise<any>, resolving?: boolean, reasoning?: boolean }} action
 * @param {HTMLButtonElement} button
 */
async function act(ctx, o, action, button) {
  if (!(await confirmed(action.ask, action.yes, action.resolving, action.reasoning))) return;
  // Disabled while in flight: a double click sends once (and the same key, if it ever sent twice).
  for (const b of $('detail-actions').querySelectorAll('button')) /** @type {HTMLButtonElement} */ (b).disabled = true;
  const result = await action.run();
  if (result) $('action-result').textContent = `${action.label} ${o.order_id}: ${result.status ?? 'acknowledged'}`;
  await showOrder(ctx, o.order_id);
  button.focus();
  ctx.changed();
}
