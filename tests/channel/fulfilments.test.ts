import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgLedger } from '../../src/channel/index.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { startTestChannel } from './support.ts';

const post = async (url: string, path: string, body: unknown) => {
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};
const get = async (url: string, path: string) =>
  (await (await fetch(`${url}${path}`)).json()) as Record<string, unknown>;

describe('the provider double: fulfilments and customer accounts (seed 002)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase({ migrated: false });
  });
  afterAll(async () => db.drop());

  it('S002-15 a fulfilment is idempotent by key (a refusal included) and survives a restart of a channel on PostgreSQL', async () => {
    // Proves the first answer per key wins and is kept where the ledger is, so a restarted `start` still knows it.
    const first = await startTestChannel({ store: await createPgLedger(db.pool), control: true });
    const done = await post(first.url, '/fulfilments', { key: 'o1/fulfil', order_id: 'o1' });
    expect(done).toMatchObject({ status: 200, body: { result: 'FULFILLED' } });
    await post(first.url, '/_control/faults', { op: 'fulfil', kind: 'REFUSE', merchant_order: 'o2' });
    expect(await post(first.url, '/fulfilments', { key: 'o2/fulfil', order_id: 'o2' })).toMatchObject({
      status: 422,
      body: { result: 'REFUSED' },
    });
    await first.close();

    const second = await startTestChannel({ store: await createPgLedger(db.pool), control: true });
    try {
      expect((await post(second.url, '/fulfilments', { key: 'o1/fulfil', order_id: 'o1' })).body.ref).toBe(
        done.body.ref,
      );
      expect((await post(second.url, '/fulfilments', { key: 'o2/fulfil', order_id: 'o2' })).status).toBe(422);
      expect(await get(second.url, `/fulfilments/${encodeURIComponent('o1/fulfil')}`)).toMatchObject({
        status: 'FULFILLED',
        ref: done.body.ref,
      });
      expect(await get(second.url, `/fulfilments/${encodeURIComponent('o3/fulfil')}`)).toMatchObject({
        status: 'NOT_FOUND',
      });
      expect(((await get(second.url, '/fulfilments')).fulfilments as unknown[]).length).toBe(2);
    } finally {
      await second.close();
    }
  });

  it('S002-16 a charge above the customer balance is DECLINED with INSUFFICIENT_FUNDS; a charge takes, a refund gives back, a repeat changes nothing', async () => {
    // Proves the account moves once per charge and once per refund, whatever is repeated.
    const channel = await startTestChannel({ control: true });
    try {
      await post(channel.url, '/_control/accounts', { customer: 't/u', balance: 500 });
      const charge = { merchant_order: 'a1', amount: 120, notify_url: 'http://127.0.0.1:1/n', customer: 't/u' };
      expect((await post(channel.url, '/charge', charge)).body.result).toBe('CHARGED');
      expect((await post(channel.url, '/charge', charge)).body.result).toBe('CHARGED');
      expect(await get(channel.url, `/_control/accounts/${encodeURIComponent('t/u')}`)).toEqual({
        customer: 't/u',
        balance: 380,
      });
      const big = await post(channel.url, '/charge', { ...charge, merchant_order: 'a2', amount: 400 });
      expect(big.body).toMatchObject({ result: 'DECLINED', reason: 'INSUFFICIENT_FUNDS' });
      await post(channel.url, '/refund', { merchant_order: 'a1', refund_key: 'a1/refund', amount: 120 });
      await post(channel.url, '/refund', { merchant_order: 'a1', refund_key: 'a1/refund', amount: 120 });
      expect(await get(channel.url, `/_control/accounts/${encodeURIComponent('t/u')}`)).toEqual({
        customer: 't/u',
        balance: 500,
      });
    } finally {
      await channel.close();
    }
  });
});
