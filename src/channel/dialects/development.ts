import { createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { httpRequest } from '../../platform/http.client.ts';
import { rsaPrivateKey } from '../../platform/rsa-key.ts';
import type { Dialect } from '../dialect.ts';
import { alipayDialect } from './alipay.ts';
import { stripeDialect } from './stripe.ts';

// A real provider's double on this machine, for development (`flashpay start` with
// FLASHPAY_PROVIDER=stripe|alipay and no provider address, `flashpay double`). Its credentials are
// development ones, made per installation under the data directory and marked as such; they open
// nothing but this double.

export type DoubleName = 'stripe' | 'alipay';

/** What flashpay needs to talk to the double, as the environment would give it. */
export type DoubleEnv = Record<string, string>;

export interface DevelopmentDouble {
  dialect: Dialect;
  /** STRIPE_… or ALIPAY_… for a flashpay pointed at the double listening at `url`. */
  env(url: string): DoubleEnv;
  /** After flashpay listens: where the double sends its notifications (Stripe's webhook endpoint). */
  connect?(url: string, webhookUrl: string): Promise<void>;
}

const DEV_PREFIX = 'dev_only_';
const STRIPE_DEV_KEY = 'sk_test_flashpay_double_development_only';
const ALIPAY_DEV_APP_ID = '2021000000000000';

async function keptSecret(dataDir: string, file: string, make: () => string): Promise<string> {
  const where = path.join(dataDir, file);
  if (existsSync(where)) return (await readFile(where, 'utf8')).trim();
  await mkdir(dataDir, { recursive: true });
  // `wx`: two processes starting at once keep the first one's; both then read it.
  await writeFile(where, `${make()}\n`, { mode: 0o600, flag: 'wx' }).catch(() => undefined);
  return (await readFile(where, 'utf8')).trim();
}

function rsaPem(): string {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}

function publicOf(privateKey: string): string {
  return createPublicKey(rsaPrivateKey(privateKey, 'ALIPAY_PRIVATE_KEY'))
    .export({ type: 'spki', format: 'pem' })
    .toString();
}

/** The double of `name`, with credentials from the environment when set, else development ones under `dataDir`. */
export async function developmentDouble(
  name: DoubleName,
  dataDir: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<DevelopmentDouble> {
  if (name === 'stripe') {
    const apiKey = env.STRIPE_SECRET_KEY || STRIPE_DEV_KEY;
    const webhookSecret =
      env.STRIPE_WEBHOOK_SECRET ||
      (await keptSecret(
        dataDir,
        'stripe-double-webhook.secret',
        () => `whsec_${DEV_PREFIX}${randomBytes(24).toString('hex')}`,
      ));
    return {
      dialect: stripeDialect({ webhookSecret, apiKey }),
      env: (url) => ({ STRIPE_API_BASE: url, STRIPE_SECRET_KEY: apiKey, STRIPE_WEBHOOK_SECRET: webhookSecret }),
      async connect(url, webhookUrl) {
        const body = new URLSearchParams({ url: webhookUrl, 'enabled_events[]': '*' }).toString();
        const answer = await httpRequest(`${url}/v1/webhook_endpoints`, {
          method: 'POST',
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/x-www-form-urlencoded' },
          body,
          timeoutMs: 5_000,
        });
        if (answer.status !== 200) throw new Error(`stripe double: webhook endpoint not registered (${answer.status})`);
      },
    };
  }
  // Two key pairs, as with Alipay: the app's (it signs requests; the double checks with its public
  // half) and Alipay's (the double signs answers and notifies; flashpay checks with its public half).
  const appKey = env.ALIPAY_PRIVATE_KEY || (await keptSecret(dataDir, 'alipay-double-app.pem', rsaPem));
  const platformKey = await keptSecret(dataDir, 'alipay-double-platform.pem', rsaPem);
  const appId = env.ALIPAY_APP_ID || ALIPAY_DEV_APP_ID;
  return {
    dialect: alipayDialect({ platformPrivateKey: platformKey, appPublicKey: publicOf(appKey), appId }),
    env: (url) => ({
      ALIPAY_GATEWAY: `${url}/gateway.do`,
      ALIPAY_APP_ID: appId,
      ALIPAY_PRIVATE_KEY: appKey,
      ALIPAY_PUBLIC_KEY: publicOf(platformKey),
    }),
  };
}
