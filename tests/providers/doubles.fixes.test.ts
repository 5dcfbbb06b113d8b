import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { AlipaySdk } from 'alipay-sdk';
import type Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { developmentDouble, startChannel, type RunningChannel } from '../../src/channel/index.ts';
import { BUYER_CONFIRM_METHOD, BUYER_WAIT_METHOD } from '../../src/channel/dialects/alipay.ts';
import { providerHarness } from '../support/providers/index.ts';
import { appSdk } from '../support/providers/alipay.ts';
import { testStripeSdk } from '../support/providers/stripe.ts';

// The provider doubles' own state and edges: what `/_control/reset` forgets, a pay of a trade that
// waits for its buyer, a refund key reused across trades, a bare-base64 app key, the bill tokens.
// Each double runs alone (no flashpay in front): the SDKs speak to it, its ledger is the outcome.

type Statement = { lines: Array<{ type: string; merchant_order: string; amount: number }> };
type Answer = Record<string, unknown>;

async function startDouble(provider: 'stripe' | 'alipay'): Promise<RunningChannel> {
  const harness = await providerHarness(provider);
  return startChannel({
    notifySecret: 'unused-by-provider-doubles-their-dialect-signs',
    dialect: harness.dialect,
    bodyLimitBytes: 64 * 1024,
    control: true,
  });
}

async function control(channel: RunningChannel, method: string, route: string): Promise<unknown> {
  const response = await fetch(`${channel.url}${route}`, { method });
  expect(response.status).toBe(200);
  return response.json();
}

async function linesOf(channel: RunningChannel, order: string) {
  const statement = (await control(channel, 'GET', '/_control/statement')) as Statement;
  return statement.lines.filter((l) => l.merchant_order === order).map((l) => [l.type, l.amount]);
}

describe('the Stripe double', () => {
  let channel: RunningChannel;
  let sdk: Stripe;
  beforeAll(async () => {
    channel = await startDouble('stripe');
    sdk = testStripeSdk(channel.url);
  });
  afterAll(async () => channel.close());
  beforeEach(async () => {
    await control(channel, 'POST', '/_control/reset');
  });

  const create = (order: string, key: string, paymentMethod = 'pm_card_visa') =>
    sdk.paymentIntents.create(
      { amount: 1990, currency: 'usd', confirm: true, payment_method: paymentMethod, metadata: { order_id: order } },
      { idempotencyKey: key },
    );

  it('DF-01 /_control/reset forgets the stored answers, the PaymentIntents awaiting the buyer and the armed 3-D Secure', async () => {
    // Proves a reset double starts clean: a key replayed after it charges anew, nothing waits, nothing asks for 3-D Secure.
    expect((await create('df1-paid', 'k-df1')).status).toBe('succeeded');
    const waiting = await create('df1-wait', 'k-df1-wait', 'pm_card_threeDSecure2Required');
    expect(waiting.status).toBe('requires_action');
    await sdk.rawRequest('POST', '/v1/test_helpers/payment_intents/require_action', { order_id: 'df1-armed' });
    await control(channel, 'POST', '/_control/reset');

    expect((await create('df1-paid', 'k-df1')).status).toBe('succeeded');
    expect(await linesOf(channel, 'df1-paid')).toEqual([['CHARGE', 1990]]);
    await expect(sdk.paymentIntents.retrieve(waiting.id)).rejects.toMatchObject({ statusCode: 404 });
    expect((await create('df1-armed', 'k-df1-armed')).status).toBe('succeeded');
    expect(await linesOf(channel, 'df1-armed')).toEqual([['CHARGE', 1990]]);
  });

  it('DF-02 a second create of a PaymentIntent awaiting the buyer (another key) answers requires_action and moves no money', async () => {
    // Proves only the buyer's confirmation charges a 3-D Secure PaymentIntent, whatever else is sent.
    const first = await create('df2', 'k-df2-a', 'pm_card_threeDSecure2Required');
    expect(first.status).toBe('requires_action');
    const again = await create('df2', 'k-df2-b');
    expect([again.id, again.status, again.amount]).toEqual([first.id, 'requires_action', 1990]);
    expect(await linesOf(channel, 'df2')).toEqual([]);
    expect((await sdk.paymentIntents.confirm(first.id)).status).toBe('succeeded');
    expect(await linesOf(channel, 'df2')).toEqual([['CHARGE', 1990]]);
  });
});

describe('the Alipay double', () => {
  let channel: RunningChannel;
  let sdk: AlipaySdk;
  const notifyUrl = 'http://127.0.0.1:9/notify'; // never reached: callbacks are held
  beforeAll(async () => {
    channel = await startDouble('alipay');
    sdk = appSdk(channel.url);
  });
  afterAll(async () => channel.close());
  beforeEach(async () => {
    await control(channel, 'POST', '/_control/reset');
    await fetch(`${channel.url}/_control/callbacks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ mode: 'HOLD' }),
    });
  });

  const exec = async (method: string, bizContent: Answer, extra: Answer = {}) =>
    (await sdk.exec(method, { bizContent, ...extra }, { validateSign: true })) as Answer;
  const pay = (order: string) =>
    exec(
      'alipay.trade.pay',
      { out_trade_no: order, total_amount: '19.90', subject: 'df', scene: 'bar_code' },
      { notify_url: notifyUrl },
    );
  const refund = (order: string, key: string) =>
    exec('alipay.trade.refund', { out_trade_no: order, out_request_no: key, refund_amount: '19.90' });

  it('DF-03 /_control/reset forgets the trades waiting for their buyer, the armed waits and the bill tokens', async () => {
    // Proves a reset double starts clean: no trade waits, the next pay lands, an old bill URL is gone.
    await exec(BUYER_WAIT_METHOD, { out_trade_no: 'df3-wait' });
    expect((await pay('df3-wait')).code).toBe('10003');
    await exec(BUYER_WAIT_METHOD, { out_trade_no: 'df3-armed' });
    const bill = await exec('alipay.data.dataservice.bill.downloadurl.query', { bill_date: '2026-01-01' });
    expect((await fetch(String(bill.bill_download_url))).status).toBe(200);
    await control(channel, 'POST', '/_control/reset');

    expect(await exec('alipay.trade.query', { out_trade_no: 'df3-wait' })).toMatchObject({
      code: '40004',
      sub_code: 'ACQ.TRADE_NOT_EXIST',
    });
    expect((await exec(BUYER_CONFIRM_METHOD, { out_trade_no: 'df3-wait' })).sub_code).toBe('ACQ.TRADE_NOT_EXIST');
    expect((await pay('df3-armed')).code).toBe('10000');
    expect(await linesOf(channel, 'df3-armed')).toEqual([['CHARGE', 1990]]);
    expect(await linesOf(channel, 'df3-wait')).toEqual([]);
    expect((await fetch(String(bill.bill_download_url))).status).toBe(404);
  });

  it('DF-04 a refund under an out_request_no used for another trade is ACQ.INVALID_PARAMETER and refunds nothing', async () => {
    // Proves the key's reuse is named as such (not "already refunded"), and the second trade stays paid.
    expect((await pay('df4-a')).code).toBe('10000');
    expect((await pay('df4-b')).code).toBe('10000');
    expect((await refund('df4-a', 'df4-key')).code).toBe('10000');
    expect(await refund('df4-b', 'df4-key')).toMatchObject({
      code: '40004',
      sub_code: 'ACQ.INVALID_PARAMETER',
      sub_msg: 'out_request_no was used for another trade',
    });
    expect(await linesOf(channel, 'df4-b')).toEqual([['CHARGE', 1990]]);
    expect((await exec('alipay.trade.query', { out_trade_no: 'df4-b' })).trade_status).toBe('TRADE_SUCCESS');
  });

  it('DF-05 a second pay of a trade waiting for its buyer answers 10003 again and moves no money until the buyer confirms', async () => {
    // Proves only the buyer's confirmation charges a WAIT_BUYER_PAY trade, however often it is paid.
    await exec(BUYER_WAIT_METHOD, { out_trade_no: 'df5' });
    expect((await pay('df5')).code).toBe('10003');
    expect(await pay('df5')).toMatchObject({ code: '10003', out_trade_no: 'df5', total_amount: '19.90' });
    expect(await linesOf(channel, 'df5')).toEqual([]);
    expect((await exec('alipay.trade.query', { out_trade_no: 'df5' })).trade_status).toBe('WAIT_BUYER_PAY');
    expect((await exec(BUYER_CONFIRM_METHOD, { out_trade_no: 'df5' })).code).toBe('10000');
    expect(await linesOf(channel, 'df5')).toEqual([['CHARGE', 1990]]);
  });

  it('DF-06 the double keeps the newest 64 bill URLs: the oldest of 65 is gone, the newest served', async () => {
    // Proves the bill tokens cannot grow without bound in a long-running double.
    const urls: string[] = [];
    for (let i = 0; i < 65; i++)
      urls.push(String((await exec('alipay.data.dataservice.bill.downloadurl.query', {})).bill_download_url));
    expect((await fetch(urls[0]!)).status).toBe(404);
    expect((await fetch(urls[1]!)).status).toBe(200);
    expect((await fetch(urls[64]!)).status).toBe(200);
  });
});

describe('`flashpay double alipay` credentials', () => {
  it('DF-07 an ALIPAY_PRIVATE_KEY given as bare base64 (PKCS#8 or PKCS#1) starts the double, which verifies that key', async () => {
    // Proves the double reads the app key in the forms flashpay's adapter accepts, and a pay signed with it lands.
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-df7-'));
    try {
      for (const type of ['pkcs8', 'pkcs1'] as const) {
        const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
        const bare = privateKey.export({ type, format: 'der' }).toString('base64');
        const double = await developmentDouble('alipay', dataDir, { ALIPAY_PRIVATE_KEY: bare });
        const channel = await startChannel({ notifySecret: 'unused', dialect: double.dialect, control: true });
        try {
          const env = double.env(channel.url);
          const sdk = new AlipaySdk({
            appId: env.ALIPAY_APP_ID!,
            privateKey: bare,
            keyType: type === 'pkcs8' ? 'PKCS8' : 'PKCS1',
            alipayPublicKey: env.ALIPAY_PUBLIC_KEY!,
            gateway: env.ALIPAY_GATEWAY!,
            camelcase: false,
          });
          const order = `df7-${type}`;
          const answer = await sdk.exec(
            'alipay.trade.pay',
            {
              bizContent: { out_trade_no: order, total_amount: '19.90', subject: 'df7', scene: 'bar_code' },
              notify_url: 'http://127.0.0.1:9/notify',
            },
            { validateSign: true },
          );
          expect(answer).toMatchObject({ code: '10000', out_trade_no: order });
          expect(await linesOf(channel, order)).toEqual([['CHARGE', 1990]]);
        } finally {
          await channel.close();
        }
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
