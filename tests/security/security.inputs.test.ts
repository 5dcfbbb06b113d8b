import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signPayload } from '../../src/platform/signature.ts';
import { BIN } from '../support/process.ts';
import { rawToken } from '../support/tokens.ts';
import {
  AUDIENCE,
  baseEnv,
  expectProblem,
  ISSUER,
  RATE_LIMIT_PER_MINUTE,
  rawRequest,
  SECRETS,
  signedNotification,
  type Target,
} from './attacker.ts';
import { ACME, launchAcme } from './acme.ts';

// Issue 11, continued (security.test.ts has tenants, scopes and secrets): tokens, hostile
// inputs, replays, the metrics route, floods and the start-up refusals, against a real
// `flashpay start`. Every refusal is checked for its status, its problem+json code, and that
// nothing changed.

describe('security: tokens, inputs, replays, floods', () => {
  let t: Target;
  let acmeAdmin: string;
  let alice: string;
  let paidOrder = '';
  let order: (token: string, key: string, body: unknown) => ReturnType<Target['call']>;
  let unchanged: (attack: () => Promise<void>) => Promise<void>;

  beforeAll(async () => {
    ({ t, acmeAdmin, alice, paidOrder, order, unchanged } = await launchAcme());
  }, 120_000);
  afterAll(async () => t?.stop());

  it('tokens: exp required, iss and aud checked, alg pinned, the scheme case-insensitive', async () => {
    const claims = { sub: 'alice', tid: ACME, scope: 'buyer', iss: ISSUER, aud: AUDIENCE };
    const bad: Array<[string, Promise<string>]> = [
      ['no exp', rawToken(claims, { secret: SECRETS.jwt, exp: null })],
      ['wrong aud', rawToken({ ...claims, aud: 'another-api' }, { secret: SECRETS.jwt })],
      ['no aud', rawToken({ ...claims, aud: undefined }, { secret: SECRETS.jwt })],
      ['wrong iss', rawToken({ ...claims, iss: 'someone' }, { secret: SECRETS.jwt })],
      ['alg none', rawToken(claims, { alg: 'none' })],
      ['HS256 with a short secret', rawToken(claims, { secret: 'short' })],
      ['HS512 with the right secret', rawToken(claims, { secret: SECRETS.jwt, alg: 'HS512' })],
      ['expired beyond the skew', rawToken(claims, { secret: SECRETS.jwt, exp: Math.floor(Date.now() / 1000) - 120 })],
      ['scope made up', rawToken({ ...claims, scope: 'root' }, { secret: SECRETS.jwt })],
      [
        'valid for a year',
        rawToken(claims, { secret: SECRETS.jwt, exp: Math.floor(Date.now() / 1000) + 365 * 24 * 3600 }),
      ],
    ];
    await unchanged(async () => {
      for (const [name, token] of bad) {
        const reply = await order(await token, `tok-${name}`, { sku: 'tee' });
        expect([name, reply.status, reply.body.code]).toEqual([name, 401, 'UNAUTHENTICATED']);
      }
    });
    for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
      expect(
        (await t.call('GET', `/v1/orders/${paidOrder}`, { headers: { authorization: `${scheme} ${alice}` } })).status,
      ).toBe(200);
    }
  });

  it('NUL and other control characters in every field, path, query and header (and prototype keys): 400, nothing stored', async () => {
    const bob = await t.token(ACME, 'nul-bob');
    const cases: Array<[string, () => Promise<{ status: number; body: { code?: string } }>]> = [
      ['sku', () => order(bob, 'n1', { sku: 'tee\u0000' })],
      ['sku with U+0001', () => order(bob, 'n2', { sku: '\u0001tee' })],
      ['a field name', () => order(bob, 'n3', { 'sku\u0000': 'tee' })],
      ['lines[0].sku', () => order(bob, 'n4', { lines: [{ sku: 't\u0000' }] })],
      ['path id (GET)', () => t.call('GET', '/v1/orders/ord%00x', { token: bob })],
      [
        'path id (pay)',
        () => t.call('POST', '/v1/orders/ord%00x/pay', { token: bob, headers: { 'idempotency-key': 'n5' } }),
      ],
      ['path id (cancel)', () => t.call('POST', '/v1/orders/%1Bord/cancel', { token: bob })],
      ['query', () => t.call('GET', `/v1/orders/${paidOrder}?x=%00`, { token: alice })],
      [
        'admin SKU name',
        () =>
          t.call('POST', '/v1/admin/skus', {
            token: acmeAdmin,
            body: { sku: 'nul', name: 'N\u0000', price: 1, stock: 1 },
          }),
      ],
      ['admin SKU path', () => t.call('GET', '/v1/admin/skus/te%00e', { token: acmeAdmin })],
      [
        'signed notification merchant_order',
        () =>
          signedNotification(t, {
            notify_id: 'n-1',
            merchant_order: `${paidOrder}\u0000`,
            kind: 'CHARGED',
            amount: 1990,
            txn: 'x',
          }),
      ],
      [
        'signed notification notify_id',
        () =>
          signedNotification(t, { notify_id: 'n\u0000', merchant_order: paidOrder, kind: 'REFUNDED', amount: 1990 }),
      ],
      ['DEL in the body', () => order(bob, 'n6', { sku: 'tee\u007f' })],
      ['C1 in the body', () => order(bob, 'n7', { sku: 'tee\u0085' })],
      [
        '__proto__ (prototype poisoning)',
        () =>
          t.call('POST', '/v1/orders', {
            token: bob,
            raw: '{"sku":"tee","__proto__":{"admin":true}}',
            headers: { 'idempotency-key': 'n8' },
          }),
      ],
      [
        'constructor.prototype',
        () =>
          t.call('POST', '/v1/orders', {
            token: bob,
            raw: '{"sku":"tee","constructor":{"prototype":{"admin":true}}}',
            headers: { 'idempotency-key': 'n9' },
          }),
      ],
    ];
    await unchanged(async () => {
      for (const [name, attempt] of cases) {
        const reply = await attempt();
        expect([name, reply.status, reply.body.code]).toEqual([name, 400, 'VALIDATION']);
      }
      // What fetch will not even send: a control character in a header, answered by our handler.
      const raw = await rawRequest(
        t.api,
        `POST /v1/orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${bob}\r\nIdempotency-Key: a\u0001b\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{"sku":"tee"}`,
      );
      expect([raw.status, raw.contentType, JSON.parse(raw.body).code]).toEqual([
        400,
        'application/problem+json',
        'VALIDATION',
      ]);
    });
  });

  it('every other odd input gets problem+json with a stable code, the field or the limit named', async () => {
    const bob = await t.token(ACME, 'odd-bob');
    await unchanged(async () => {
      expectProblem(await t.call('GET', '/v1/orders/%E0%A4%A', { token: bob }), 400, 'VALIDATION');
      const long = await t.call('GET', `/v1/orders/${'x'.repeat(101)}`, { token: bob });
      expectProblem(long, 414, 'URI_TOO_LONG');
      expect(long.body.limit).toBe(100);
      const big = await t.call('POST', '/v1/orders', {
        token: bob,
        raw: JSON.stringify({ sku: 'x'.repeat(20_000) }),
        headers: { 'idempotency-key': 'big' },
      });
      expectProblem(big, 413, 'PAYLOAD_TOO_LARGE');
      expect(big.body.detail).toContain('16384 bytes');
      const unknown = await order(bob, 'uf', { sku: 'tee', colour: 'red' });
      expectProblem(unknown, 400, 'VALIDATION');
      expect(unknown.body.detail).toContain('colour');
      expectProblem(
        await t.call('POST', '/v1/orders', {
          token: bob,
          raw: 'sku=tee',
          headers: { 'idempotency-key': 'ct', 'content-type': 'application/x-www-form-urlencoded' },
        }),
        400,
        'VALIDATION',
      );
      for (const sku of ['.', '..', '-x', 'a/b', 'a b', 'é']) {
        expectProblem(
          await t.call('POST', '/v1/admin/skus', { token: acmeAdmin, body: { sku, name: 'n', price: 1, stock: 1 } }),
          400,
          'VALIDATION',
        );
      }
      // Free items are refused at creation: the provider refuses a charge of 0 (docs/security.md).
      expectProblem(
        await t.call('POST', '/v1/admin/skus', {
          token: acmeAdmin,
          body: { sku: 'free', name: 'Free', price: 0, stock: 1 },
        }),
        400,
        'VALIDATION',
      );
    });
  });

  it('a replayed signed notification changes nothing about the order', async () => {
    // Storing a replay once (dedup by notify_id) is the order-decider rewrite's part of issue 11.
    const raw = JSON.stringify({
      notify_id: 'replay-1',
      merchant_order: paidOrder,
      kind: 'CHARGED',
      amount: 1990,
      txn: 'replayed',
    });
    const signature = signPayload(SECRETS.notify, raw);
    await t.call('POST', '/v1/payment-notifications', { raw, headers: { 'flashpay-signature': signature } });
    const view = async () => {
      const body = (await t.call('GET', `/v1/admin/orders/${paidOrder}`, { token: acmeAdmin })).body as {
        status: string;
        version: number;
        timeline: unknown[];
      };
      return {
        status: body.status,
        version: body.version,
        timeline: body.timeline,
        ledger: (await t.call('GET', `${t.channel}/statement`)).body,
      };
    };
    const before = await view();
    const replay = await t.call('POST', '/v1/payment-notifications', {
      raw,
      headers: { 'flashpay-signature': signature },
    });
    expect([replay.status, replay.body.effect]).toEqual([200, 'DUPLICATE']);
    expect(await view()).toEqual(before);
  });

  it('`flashpay token --operator` mints what the API accepts (iss and aud stamped); an over-long --ttl is refused', async () => {
    const mint = async (args: string[]) => {
      const env = baseEnv({
        FLASHPAY_JWT_SECRET: SECRETS.jwt,
        FLASHPAY_JWT_ISSUER: ISSUER,
        FLASHPAY_JWT_AUDIENCE: AUDIENCE,
      });
      const child = spawn(process.execPath, [BIN, 'token', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('close', (exitCode) => resolve(exitCode)));
      return { code, token: out.trim() };
    };
    const minted = await mint(['--tenant', ACME, '--user', 'root', '--operator']);
    expect(minted.code).toBe(0);
    expect((await t.call('GET', '/metrics', { token: minted.token })).status).toBe(200);
    expect((await mint(['--tenant', ACME, '--user', 'root', '--ttl', String(366 * 24 * 3600)])).code).toBe(2);
  });

  it('/metrics is not public: its own token or an operator token', async () => {
    expectProblem(await t.call('GET', '/metrics'), 401, 'UNAUTHENTICATED');
    expectProblem(await t.call('GET', '/metrics', { token: acmeAdmin }), 403, 'FORBIDDEN');
    expect((await t.call('GET', '/metrics', { headers: { authorization: `Bearer ${SECRETS.metrics}` } })).status).toBe(
      200,
    );
  });

  it('a flood from one principal on one route gets 429 RATE_LIMITED with Retry-After, then recovers', async () => {
    const flooder = await t.token(ACME, 'flooder');
    const replies = [];
    const started = performance.now();
    for (let batch = 0; batch < 5; batch++) {
      replies.push(
        ...(await Promise.all(
          Array.from({ length: (RATE_LIMIT_PER_MINUTE + 10) / 5 }, () =>
            t.call('GET', '/v1/orders/ord_none', { token: flooder }),
          ),
        )),
      );
    }
    const floodS = (performance.now() - started) / 1000;
    const limited = replies.filter((r) => r.status === 429);
    expect(limited.length).toBeGreaterThanOrEqual(5);
    // Exactly: 130 requests against a bucket of 120 that refills 2 a second (src/platform/ratelimit.ts)
    // are 10 refusals, less one for each token refilled while the flood lasted; every other reply is
    // the route's own 404 (issue 55: "at least 5" passed with half the limit gone).
    expect(replies.filter((r) => r.status === 404)).toHaveLength(replies.length - limited.length);
    expect(limited.length).toBeLessThanOrEqual(10);
    expect(limited.length).toBeGreaterThanOrEqual(10 - Math.ceil((floodS * RATE_LIMIT_PER_MINUTE) / 60));
    expectProblem(limited[0] ?? { status: 0, headers: new Headers(), body: {} }, 429, 'RATE_LIMITED');
    const retryAfter = Number(limited[0]?.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    // Another principal on the same route, and the same principal on another route, are not limited.
    expect((await t.call('GET', '/v1/orders/ord_none', { token: alice })).status).toBe(404);
    const wallet = (await t.call('GET', '/v1/wallet', { token: flooder })).status;
    expect(wallet).not.toBe(429);
    expect(wallet).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
    expectProblem(await t.call('GET', '/v1/orders/ord_none', { token: flooder }), 404, 'ORDER_NOT_FOUND');
  });

  it('`flashpay start` refuses production with the built-in double, and secrets shorter than 32 bytes', async () => {
    const run = async (env: Record<string, string>) => {
      const child = spawn(process.execPath, [BIN, 'start', '--port', '0', '--no-workers'], {
        env: baseEnv({ DATABASE_URL: t.db.url, ...env }),
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      const guard = setTimeout(() => child.kill('SIGKILL'), 30_000); // a start that wrongly comes up is stopped
      // 'close', not 'exit': stderr is read to its end.
      const code = await new Promise<number | null>((resolve) => child.once('close', (exitCode) => resolve(exitCode)));
      clearTimeout(guard);
      return { code, stderr };
    };
    const production = await run({
      NODE_ENV: 'production',
      FLASHPAY_JWT_SECRET: SECRETS.jwt,
      FLASHPAY_NOTIFY_SECRET: SECRETS.notify,
      FLASHPAY_EVENTS_SECRET: SECRETS.events,
    });
    expect(production.code).not.toBe(0);
    expect(production.stderr).toContain('FLASHPAY_CHANNEL_URL');
    const short = await run({
      FLASHPAY_JWT_SECRET: 'too-short',
      FLASHPAY_NOTIFY_SECRET: SECRETS.notify,
      FLASHPAY_EVENTS_SECRET: SECRETS.events,
    });
    expect(short.code).not.toBe(0);
    expect(short.stderr).toContain('at least 32 bytes');
    const shared = await run({
      FLASHPAY_JWT_SECRET: SECRETS.jwt,
      FLASHPAY_NOTIFY_SECRET: SECRETS.notify,
      FLASHPAY_EVENTS_SECRET: SECRETS.notify,
    });
    expect(shared.stderr).toContain('must all differ');
  });
});
