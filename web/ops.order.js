// @ts-check
// The console's order view and its actions (issue 36): refund, cancel, retry now, acknowledge.
// Each action asks for a confirmation naming the order and its amount, then sends its own
// Idempotency-Key, kept per (action, order, version) in sessionStorage: a second click or a retry
// after a lost answer sends the same key, and the server replays instead of acting twice.
import { h, newKey } from './api.js';
import { noteView } from './ops.notes.js';

/**
 * @typedef {{
 *   call: (method: string, path: string, body?: unknown, key?: string) => Promise<{ ok: boolean, status: number, body: any }>,
 *   checked: (request: Promise<{ ok: boolean, status: number, body: any }>) => Promise<any>,
 *   amount: (minor: number) => string,
 *   openSku: (sku: string) => void,
 *   changed: () => void,
 *   showPage: (id: string) => void,
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

// Issue 52: what the operator can do about an unfinished order, by status.
/** @type {Record<string, string>} */
const REMEDY = {
  UNKNOWN:
    "The provider's answer to the charge was lost. Recovery asks the provider again at the next attempt; “Retry now” asks it now. If the provider's own dashboard shows the outcome, “Resolve by hand” records it (reconciliation still checks it against the provider's statement).",
  PAYING:
    'The pay is in its provider call, or its process died there. Recovery takes it once it is stale (the next attempt); “Retry now” runs recovery at the shortest safe staleness. Nothing is charged twice: the provider call carries the order’s own key.',
  REFUNDING:
    'The refund was sent and its answer is pending. Recovery re-sends the same refund with the order’s fixed refund key (never a second refund); “Retry now” re-sends it now.',
  PENDING:
    'The order waits for the stock service’s answer; its request is re-sent until answered. Nothing to do here: if it lasts, check that the stock service runs (flashpay inventory) and its parked list.',
  RELEASING:
    'The order’s units are being given back by the stock service; its request is re-sent until answered. Nothing to do here: if it lasts, check that the stock service runs.',
  CREATED:
    'Not paid yet. When the hold expires the order is cancelled and its units go back on sale; “Cancel order” does it now.',
};

/**
 * Why the order is not finished: who moves it on, the attempts, the last error, the next attempt,
 * the hold's expiry and what the operator can do. Null for a finished order.
 * @param {any} o the admin order view
 */
function stuckPanel(o) {
  const remedy = REMEDY[o.status];
  if (!remedy) return null;
  const r = o.recovery;
  const hold = o.reservation?.status === 'HELD' ? o.reservation.expires_at : null;
  /** @type {Array<[string, Node | string, string]>} */
  const rows = [];
  if (r) {
    rows.push([
      'Moved on by',
      r.by === 'recovery' ? 'recovery passes (asking the provider)' : 'the stock service',
      'stuck-by',
    ]);
    if (r.by === 'recovery') {
      rows.push(['Recovery attempts', String(r.attempts), 'stuck-attempts']);
      rows.push(['Last error', r.last_error ? noteView(r.last_error) : 'none yet', 'stuck-last-error']);
      rows.push(['Last attempt', when(r.last_attempt_at), 'stuck-last-attempt']);
      rows.push(['Next attempt', when(r.next_attempt_at), 'stuck-next-attempt']);
    }
  }
  rows.push([
    'Hold expires',
    hold ? when(hold) : `— (unit ${orNone(o.reservation?.status).toLowerCase()})`,
    'stuck-hold',
  ]);
  return h(
    'section',
    { class: 'stuck', id: 'detail-stuck', 'aria-labelledby': 'stuck-title' },
    h('h3', { id: 'stuck-title' }, `Why it is ${o.status}`),
    h('dl', { class: 'figures' }, ...rows.flatMap(([dt, dd, id]) => [h('dt', {}, dt), h('dd', { id }, dd)])),
    h('p', { id: 'stuck-remedy' }, h('strong', {}, 'What you can do: '), remedy),
  );
}

// Operators' actions that are the cause of a transition: shown on that transition's line, once.
const CAUSES = new Set(['refund', 'cancel', 'resolve', 'return']);

/**
 * One line per event: an operator's refund, cancel, resolution or return is the transition it
 * made, with the operator and their reason on it (not a second line of its own).
 * @param {any[]} timeline
 */
function timelineLines(timeline) {
  /** @type {Map<any, any>} */
  const causeOf = new Map();
  /** @type {Set<any>} */
  const folded = new Set();
  for (const a of timeline) {
    if (!a.action || !CAUSES.has(a.action)) continue;
    const t = timeline.find((x) => !x.action && x.version === a.version && x.to === a.to && !causeOf.has(x));
    if (!t) continue;
    causeOf.set(t, a);
    folded.add(a);
  }
  return timeline
    .filter((t) => !folded.has(t))
    .map((t) => {
      if (t.action)
        return `${t.action} by operator ${t.operator}${t.operator_tenant ? ` of ${t.operator_tenant}` : ''} (${t.to}${t.action === 'ack' ? `: ${t.reason.replace(/^ack: /, '')}` : ''})${t.operator_reason ? ` — “${t.operator_reason}”` : ''} — ${when(t.at)}`;
      const a = causeOf.get(t);
      const by = a && !t.reason.includes(`operator ${a.operator}`) ? ` by operator ${a.operator}` : '';
      const tenant = a?.operator_tenant ? ` of ${a.operator_tenant}` : '';
      const why = a?.operator_reason ? ` — “${a.operator_reason}”` : '';
      return `${t.from ?? 'new'} → ${t.to}: ${t.reason}${by}${a ? tenant : ''}${why} — ${when(t.at)}`;
    });
}

/**
 * A notification's effect in words: a CHARGED that found the order already PAID confirmed what
 * was known (its effect is DUPLICATE: it changed nothing), which is not a fault.
 * @param {any} n @param {any} o
 */
function effectText(n, o) {
  const knownPaid = o.timeline.some((/** @type {any} */ t) => !t.action && t.to === 'PAID');
  if (n.effect === 'DUPLICATE' && n.kind === 'CHARGED' && knownPaid) return 'confirmed (already known)';
  if (n.effect === 'DUPLICATE') return 'a copy already applied (nothing changed)';
  return n.effect;
}

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
  ctx.showPage('detail');
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
    o.attention
      ? h('p', { class: 'needs-person', id: 'detail-attention' }, 'Needs a person: ', noteView(o.attention))
      : null,
    stuckPanel(o),
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
    h(
      'div',
      { id: 'detail-timeline' },
      h('h3', {}, 'Timeline'),
      h('ol', {}, ...timelineLines(o.timeline).map((line) => h('li', {}, line))),
    ),
    list(
      'Notifications',
      o.notifications,
      (n) => `${orNone(n.provider)} ${n.kind} ${n.notify_id} ${orNone(n.txn)}: ${effectText(n, o)}`,
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
