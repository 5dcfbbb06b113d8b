import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeCompletedKeysBatch } from '../../src/idempotency/idempotency.repo.ts';
import { skuCounters } from '../support/fixtures.ts';
import { createSku, startPaymentStack, TENANT, type PaymentStack } from '../support/payments.ts';
import { countRows } from '../support/stack.ts';

// Issue 48, "an audit trail worth the name": the money-moving operator actions (refund, cancel,
// wallet credit) say why; the reason, the operator's tenant and `sub` and the time are kept in
// append-only tables over a real PostgreSQL; a key another admin used is refused, not replayed.

let stack: PaymentStack;
let keys = 0;
const key = (what: string) => `au-${what}-${++keys}`;

beforeAll(async () => {
  stack = await startPaymentStack();
});
afterAll(async () => {
  await stack?.close();
});

const as = (token: string, method: string, path: string, k: string | undefined, body?: unknown) =>
  stack.call(method, path, {
    token,
    headers: k ? { 'idempotency-key': k } : {},
    ...(body === undefined ? {} : { body }),
  });
const refundLines = async (orderId: string) =>
  (await stack.statement()).lines.filter((l) => l.type === 'REFUND' && l.merchant_order === orderId).length;
const actionRows = (orderId: string) =>
  stack.db.pool
    .query<{ action: string; operator: string; operator_tenant: string; reason: string; at: Date }>(
      'SELECT action, operator, operator_tenant, reason, at FROM order_operator_actions WHERE order_id = $1 ORDER BY id',
      [orderId],
    )
    .then((r) => r.rows);
const balance = async (user: string) =>
  (await stack.call('GET', `/v1/admin/wallets/${user}`, { token: stack.admin })).body.balance as number;

/** Every body that does not carry a reason of 1..500 characters with a non-blank one. */
const WITHOUT_REASON: Array<[string, unknown]> = [
  ['no body', undefined],
  ['empty object', {}],
  ['empty reason', { reason: '' }],
  ['blank reason', { reason: '   ' }],
  ['501 characters', { reason: 'x'.repeat(501) }],
  ['a number', { reason: 42 }],
];

describe('issue 48: an audit trail worth the name', () => {
  it('AU-01: refund, cancel and credit without a reason are 400 VALIDATION naming body.reason, and nothing changes', async () => {
    // Proves the reason is checked at the edge before any key, provider call, stock move or transfer.
    await createSku(stack, { sku: 'au1', stock: 3 });
    const paid = await stack.buy('au1-buyer', 'au1');
    expect((await stack.pay(paid.token, paid.orderId)).body.status).toBe('PAID');
    const unpaid = await stack.buy('au1-buyer', 'au1');
    const before = await skuCounters(stack, 'au1');
    const credit = { amount: 500 };
    for (const [what, body] of WITHOUT_REASON) {
      const creditBody = body === undefined ? credit : { ...credit, ...(body as object) };
      const answers = [
        await as(stack.admin, 'POST', `/v1/admin/orders/${paid.orderId}/refund`, key('r'), body),
        await as(stack.admin, 'POST', `/v1/admin/orders/${unpaid.orderId}/cancel`, key('c'), body),
        await as(stack.admin, 'POST', '/v1/admin/wallets/au1-buyer/credits', key('w'), creditBody),
      ];
      for (const a of answers) {
        expect([what, a.status, a.body.code, a.body.field]).toEqual([what, 400, 'VALIDATION', 'body.reason']);
        expect(a.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      }
    }
    expect((await stack.order(paid.orderId)).status).toBe('PAID');
    expect((await stack.order(unpaid.orderId)).status).toBe('CREATED');
    expect(await refundLines(paid.orderId)).toBe(0);
    expect(await skuCounters(stack, 'au1')).toEqual(before);
    expect(await balance('au1-buyer')).toBe(0);
    expect(await countRows(stack.db, 'order_operator_actions')).toBe(0);
    expect(await countRows(stack.db, 'wallet_credit_actions')).toBe(0);
    expect(await countRows(stack.db, 'wallet_transfers')).toBe(0);
    // 500 characters is the bound itself: accepted.
    const longest = 'y'.repeat(500);
    const ok = await as(stack.admin, 'POST', `/v1/admin/orders/${unpaid.orderId}/cancel`, key('c'), {
      reason: longest,
    });
    expect([ok.status, ok.body.status]).toEqual([200, 'CANCELLED']);
    expect((await actionRows(unpaid.orderId)).map((r) => r.reason)).toEqual([longest]);
  });

  it('AU-02: each refund, cancel and credit keeps its reason, operator tenant, sub and time; the admin views show them, after the key is purged', async () => {
    // Proves the trail holds who, from which tenant, why and when, and outlives the Idempotency-Key.
    await createSku(stack, { sku: 'au2', stock: 3 });
    const paid = await stack.buy('au2-buyer', 'au2');
    expect((await stack.pay(paid.token, paid.orderId)).body.status).toBe('PAID');
    const unpaid = await stack.buy('au2-buyer', 'au2');
    const anna = await stack.token(TENANT, 'ops-anna', 'admin');
    const refund = await as(anna, 'POST', `/v1/admin/orders/${paid.orderId}/refund`, key('r'), {
      reason: 'buyer called: parcel arrived damaged',
    });
    expect([refund.status, refund.body.status]).toEqual([200, 'REFUNDED']);
    const cancel = await as(anna, 'POST', `/v1/admin/orders/${unpaid.orderId}/cancel`, key('c'), {
      reason: 'duplicate order',
    });
    expect([cancel.status, cancel.body.status]).toEqual([200, 'CANCELLED']);
    const creditKey = key('w');
    const credit = await as(anna, 'POST', '/v1/admin/wallets/au2-buyer/credits', creditKey, {
      amount: 700,
      reason: 'goodwill: late delivery',
    });
    expect(credit.status).toBe(201);

    expect(await actionRows(paid.orderId)).toEqual([
      {
        action: 'refund',
        operator: 'ops-anna',
        operator_tenant: TENANT,
        reason: 'buyer called: parcel arrived damaged',
        at: expect.any(Date),
      },
    ]);
    expect(await actionRows(unpaid.orderId)).toEqual([
      {
        action: 'cancel',
        operator: 'ops-anna',
        operator_tenant: TENANT,
        reason: 'duplicate order',
        at: expect.any(Date),
      },
    ]);
    // Every idempotency key purged (as the retention does): the credit's trace stays.
    await purgeCompletedKeysBatch(stack.db.pool, new Date(Date.now() + 365 * 86_400_000));
    expect(await countRows(stack.db, 'idempotency_keys', 'idempotency_key = $1', [creditKey])).toBe(0);
    const credits = await stack.db.pool.query(
      'SELECT transfer_id, user_id, amount, operator, operator_tenant, reason FROM wallet_credit_actions',
    );
    expect(credits.rows).toEqual([
      {
        transfer_id: `credit:${creditKey}`,
        user_id: 'au2-buyer',
        amount: 700,
        operator: 'ops-anna',
        operator_tenant: TENANT,
        reason: 'goodwill: late delivery',
      },
    ]);

    const view = await stack.order(paid.orderId);
    expect(view.timeline.filter((t) => (t as { action?: string }).action)).toEqual([
      expect.objectContaining({
        action: 'refund',
        operator: 'ops-anna',
        operator_tenant: TENANT,
        operator_reason: 'buyer called: parcel arrived damaged',
        at: expect.any(String),
      }),
    ]);
    const wallet = await stack.call('GET', '/v1/admin/wallets/au2-buyer', { token: stack.admin });
    expect(wallet.body.transfers).toEqual([
      expect.objectContaining({
        kind: 'CREDIT',
        amount: 700,
        operator: 'ops-anna',
        operator_tenant: TENANT,
        reason: 'goodwill: late delivery',
      }),
    ]);
  });

  it('AU-03: the trails are append-only: UPDATE, DELETE and TRUNCATE over a real connection raise, and the rows stay', async () => {
    // Proves the database itself refuses to rewrite history, whoever is connected (the app's own role here).
    const before = {
      actions: await countRows(stack.db, 'order_operator_actions'),
      credits: await countRows(stack.db, 'wallet_credit_actions'),
    };
    expect(before.actions).toBeGreaterThan(0);
    expect(before.credits).toBeGreaterThan(0);
    const refusal = (sql: string) =>
      stack.db.pool.query(sql).then(
        () => 'accepted',
        (error: { message: string }) => error.message,
      );
    for (const sql of [
      "UPDATE order_operator_actions SET reason = 'nothing to see'",
      'UPDATE order_operator_actions SET operator = operator',
      'DELETE FROM order_operator_actions',
      'TRUNCATE order_operator_actions',
      "UPDATE wallet_credit_actions SET reason = 'nothing to see'",
      'DELETE FROM wallet_credit_actions',
      'TRUNCATE wallet_credit_actions',
    ])
      expect([sql, await refusal(sql)]).toEqual([sql, expect.stringMatching(/is append-only/)]);
    expect(await countRows(stack.db, 'order_operator_actions')).toBe(before.actions);
    expect(await countRows(stack.db, 'wallet_credit_actions')).toBe(before.credits);
    expect(await countRows(stack.db, 'order_operator_actions', "reason = 'nothing to see'")).toBe(0);
  });

  it('AU-04: a credit key another admin used is refused 409, not replayed: no second credit, the first admin still replays', async () => {
    // Proves the transfer id derived from the key alone no longer tells a second admin 201 for a credit it did not make.
    const anna = await stack.token(TENANT, 'ops-anna', 'admin');
    const ben = await stack.token(TENANT, 'ops-ben', 'admin');
    const k = key('shared');
    const first = await as(anna, 'POST', '/v1/admin/wallets/au4-buyer/credits', k, {
      amount: 300,
      reason: 'refund in kind',
    });
    expect([first.status, first.body.balance]).toEqual([201, 300]);
    for (const body of [
      { amount: 300, reason: 'refund in kind' },
      { amount: 300, reason: 'my own reason' },
      { amount: 999, reason: 'another amount' },
    ]) {
      const other = await as(ben, 'POST', '/v1/admin/wallets/au4-buyer/credits', k, body);
      expect([other.status, other.body.code]).toEqual([409, 'IDEMPOTENCY_KEY_OF_ANOTHER_OPERATOR']);
    }
    const again = await as(anna, 'POST', '/v1/admin/wallets/au4-buyer/credits', k, {
      amount: 300,
      reason: 'refund in kind',
    });
    expect([again.status, again.text, again.headers.get('idempotent-replayed')]).toEqual([201, first.text, 'true']);
    // The first admin's key purged: the ledger still knows the credit is anna's (replayed to her, refused to ben).
    await purgeCompletedKeysBatch(stack.db.pool, new Date(Date.now() + 365 * 86_400_000));
    const afterPurge = await as(anna, 'POST', '/v1/admin/wallets/au4-buyer/credits', k, { amount: 300, reason: 'x' });
    expect([afterPurge.status, afterPurge.body.balance]).toEqual([201, 300]);
    const benAfterPurge = await as(ben, 'POST', '/v1/admin/wallets/au4-buyer/credits', k, { amount: 300, reason: 'x' });
    expect([benAfterPurge.status, benAfterPurge.body.code]).toEqual([409, 'IDEMPOTENCY_KEY_OF_ANOTHER_OPERATOR']);
    expect(await balance('au4-buyer')).toBe(300);
    expect(await countRows(stack.db, 'wallet_transfers', "user_id = 'au4-buyer'")).toBe(1);
    expect(
      (await stack.db.pool.query("SELECT operator FROM wallet_credit_actions WHERE user_id = 'au4-buyer'")).rows,
    ).toEqual([{ operator: 'ops-anna' }]);
    // Another tenant's admin with the same key credits its own tenant's buyer: tenants never share keys.
    const foreign = await stack.token('tenant-other', 'ops-anna', 'admin');
    const theirs = await as(foreign, 'POST', '/v1/admin/wallets/au4-buyer/credits', k, { amount: 5, reason: 'theirs' });
    expect([theirs.status, theirs.body.balance]).toEqual([201, 5]);
    expect(await balance('au4-buyer')).toBe(300);
  });

  it('AU-05: an order action key another admin used is their own request, never a replay of the first admin’s answer', async () => {
    // Proves keys of order actions are per operator: ben's refund with anna's key is judged on its own (409 REJECTED), one refund.
    await createSku(stack, { sku: 'au5', stock: 2 });
    const paid = await stack.buy('au5-buyer', 'au5');
    expect((await stack.pay(paid.token, paid.orderId)).body.status).toBe('PAID');
    const anna = await stack.token(TENANT, 'ops-anna', 'admin');
    const ben = await stack.token(TENANT, 'ops-ben', 'admin');
    const k = key('order');
    const path = `/v1/admin/orders/${paid.orderId}/refund`;
    const first = await as(anna, 'POST', path, k, { reason: 'anna: buyer asked' });
    expect([first.status, first.body.status, first.body.operator]).toEqual([200, 'REFUNDED', 'ops-anna']);
    const byBen = await as(ben, 'POST', path, k, { reason: 'ben: buyer asked' });
    expect([byBen.status, byBen.body.code, byBen.body.order_status]).toEqual([409, 'REJECTED', 'REFUNDED']);
    expect(byBen.headers.get('idempotent-replayed')).not.toBe('true');
    expect(await refundLines(paid.orderId)).toBe(1);
    expect((await actionRows(paid.orderId)).map((r) => [r.operator, r.reason])).toEqual([
      ['ops-anna', 'anna: buyer asked'],
    ]);
    // Anna's own retry with other words replays her answer: the reason is commentary, not the request.
    const annaAgain = await as(anna, 'POST', path, k, { reason: 'anna: other words' });
    expect([annaAgain.status, annaAgain.text, annaAgain.headers.get('idempotent-replayed')]).toEqual([
      200,
      first.text,
      'true',
    ]);
    expect(await actionRows(paid.orderId)).toHaveLength(1);
  });
});
