import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPgLedger } from '../../src/channel/index.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { client, startTestChannel } from './support.ts';

// Issue 38, item 4: the fake provider's customer accounts (seed 002's balances) lived in process
// memory: a restarted channel forgot every balance, charged a customer without limit, and a refund
// after the restart gave nothing back. They live with the channel's PostgreSQL ledger now.

const CUSTOMER = 't/ca-buyer';
const NOTIFY = 'http://127.0.0.1:9/unused';

describe('customer accounts of the provider double are durable (issue 38)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase({ migrated: false });
  });
  afterAll(async () => db.drop());

  const balanceRow = async () =>
    (await db.pool.query('SELECT balance FROM channel_accounts WHERE customer = $1', [CUSTOMER])).rows[0];

  it('CA-01 restart the channel: the balance is kept, a charge past it is still declined, a refund after the restart gives back once', async () => {
    // Proves the balance, the debit of a charge and whom it was taken from are committed with the
    // charge, in the channel's database, before it answers.
    const first = await startTestChannel({ store: await createPgLedger(db.pool), control: true });
    const api1 = client(first.url);
    expect((await api1.post('/_control/accounts', { customer: CUSTOMER, balance: 500 })).status).toBe(200);
    const charge = (mo: string, amount: number) =>
      ({ merchant_order: mo, amount, notify_url: NOTIFY, customer: CUSTOMER }) as const;
    expect((await api1.post('/charge', charge('ca-1', 120))).body.result).toBe('CHARGED');
    await first.close();
    expect(await balanceRow()).toEqual({ balance: 380 });

    const second = await startTestChannel({ store: await createPgLedger(db.pool), control: true });
    const api2 = client(second.url);
    try {
      expect((await api2.get(`/_control/accounts/${encodeURIComponent(CUSTOMER)}`)).body).toEqual({
        customer: CUSTOMER,
        balance: 380,
      });
      const declined = await api2.post('/charge', charge('ca-2', 381));
      expect([declined.body.result, declined.body.reason]).toEqual(['DECLINED', 'INSUFFICIENT_FUNDS']);
      // A repeat of the first charge is its first answer: nothing taken twice.
      expect((await api2.post('/charge', charge('ca-1', 120))).body.result).toBe('CHARGED');
      expect(await balanceRow()).toEqual({ balance: 380 });
      // The refund after the restart gives back to whom the charge was taken from, once.
      expect((await api2.refund('ca-1', 'ca-1/refund', 120)).body.result).toBe('REFUNDED');
      expect((await api2.refund('ca-1', 'ca-1/refund', 120)).body.result).toBe('REFUNDED');
      expect(await balanceRow()).toEqual({ balance: 500 });
      // Two charges of one customer at once: never below zero, one of them declined.
      const both = await Promise.all([
        api2.post('/charge', charge('ca-3', 300)),
        api2.post('/charge', charge('ca-4', 300)),
      ]);
      expect(both.map((r) => r.body.result).sort()).toEqual(['CHARGED', 'DECLINED']);
      expect(await balanceRow()).toEqual({ balance: 200 });
      // A reset forgets the accounts, as it forgets the ledger.
      expect((await api2.reset()).status).toBe(200);
      expect((await api2.get(`/_control/accounts/${encodeURIComponent(CUSTOMER)}`)).status).toBe(404);
    } finally {
      await second.close();
    }
  });
});
