import { generateKeyPairSync } from 'node:crypto';
import { AlipaySdk } from 'alipay-sdk';
import { alipayDialect, alipayTime } from '../../../src/channel/dialects/alipay.ts';
import { signNotify } from '../../../src/channel/dialects/alipay.wire.ts';
import { decimalFromMinor } from '../../../src/platform/money.ts';
import { loadConfig } from '../../../src/platform/config.ts';
import type { ProviderHarness } from './index.ts';

// Alipay against its local double: two RSA 2048 key pairs made once per process (the app's, which
// signs requests, and "Alipay's", which signs answers and notifies). Test keys only, never committed.

export const ALIPAY_TEST_APP_ID = '2021000000000000';

interface KeyPair {
  privateKey: string;
  publicKey: string;
}

function keyPair(): KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKey: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

let keys: { app: KeyPair; alipay: KeyPair; forger: KeyPair } | undefined;

/** The process's test keys, made on first use. */
export function alipayTestKeys(): { app: KeyPair; alipay: KeyPair; forger: KeyPair } {
  keys ??= { app: keyPair(), alipay: keyPair(), forger: keyPair() };
  return keys;
}

/** An SDK client as the app (its key), for tests that speak to the double directly (a planted trade, the buyer's phone). */
export function appSdk(doubleUrl: string): AlipaySdk {
  const { app, alipay } = alipayTestKeys();
  return new AlipaySdk({
    appId: ALIPAY_TEST_APP_ID,
    privateKey: app.privateKey,
    keyType: 'PKCS8',
    alipayPublicKey: alipay.publicKey,
    gateway: `${doubleUrl}/gateway.do`,
    camelcase: false,
  });
}

const TRADE_STATUS: Record<string, string> = {
  CHARGED: 'TRADE_SUCCESS',
  REFUNDED: 'TRADE_CLOSED',
  DECLINED: 'TRADE_CLOSED',
};

/** The fake-format notification {notify_id, merchant_order, kind, amount, txn} as the double would send it, signed. */
export function alipayNotifyForm(
  body: Record<string, unknown>,
  forged = false,
  overrides: Record<string, string> = {},
): string {
  const { alipay, forger } = alipayTestKeys();
  const amount = decimalFromMinor(Number(body.amount));
  const now = alipayTime();
  const params: Record<string, string> = {
    notify_time: now,
    notify_type: 'trade_status_sync',
    notify_id: String(body.notify_id),
    app_id: ALIPAY_TEST_APP_ID,
    charset: 'utf-8',
    version: '1.0',
    sign_type: 'RSA2',
    trade_no: String(body.txn ?? ''),
    out_trade_no: String(body.merchant_order),
    trade_status: TRADE_STATUS[String(body.kind)] ?? String(body.kind),
    total_amount: amount,
    ...(body.kind === 'REFUNDED' ? { refund_fee: amount, gmt_refund: now } : {}),
    ...overrides,
  };
  params.sign = signNotify(params, (forged ? forger : alipay).privateKey);
  return new URLSearchParams(params).toString();
}

export async function harness(): Promise<ProviderHarness> {
  const { app, alipay } = alipayTestKeys();
  return {
    name: 'alipay',
    dialect: alipayDialect({
      platformPrivateKey: alipay.privateKey,
      appPublicKey: app.publicKey,
      appId: ALIPAY_TEST_APP_ID,
    }),
    config: (doubleUrl) => ({
      providers: {
        ...loadConfig({}).providers,
        provider: 'alipay',
        alipay: {
          appId: ALIPAY_TEST_APP_ID,
          privateKey: app.privateKey,
          publicKey: alipay.publicKey,
          gateway: `${doubleUrl}/gateway.do`,
        },
      },
    }),
    notify: (stack, body, options = {}) =>
      stack.call('POST', '/v1/providers/alipay/notify', {
        rawBody: alipayNotifyForm(body, options.forged),
        headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
      }),
  };
}
