import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/platform/config.ts';
import { countRows, startStack, type HttpResult, type Stack } from '../support/stack.ts';
import { TENANT } from '../support/fixtures.ts';

// Issue 38, item 5: nothing bounded how many 401s one client address could collect (token
// guessing), and X-Forwarded-For was never read, so behind a proxy every client was the proxy.
// FLASHPAY_FAILED_AUTH_PER_MINUTE bounds the 401s per client address (then 429 RATE_LIMITED with
// Retry-After); FLASHPAY_TRUSTED_PROXIES names the peers whose X-Forwarded-For is believed.

const LIMIT = 5;

describe('failed authentications per client address (issue 38)', () => {
  const stacks: Stack[] = [];
  afterEach(async () => {
    await Promise.all(stacks.splice(0).map((s) => s.close()));
  });
  const start = async (config: Record<string, unknown>) => {
    const s = await startStack({ config });
    stacks.push(s);
    return s;
  };
  const guess = (s: Stack, n: number, forwardedFor?: string) =>
    s.call('POST', '/v1/orders', {
      token: `not.a.token${n}`,
      body: { sku: 'fa' },
      headers: { 'idempotency-key': `fa-${n}`, ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) },
    });
  const codes = (replies: HttpResult[]) => replies.map((r) => `${r.status} ${r.body?.code}`);
  async function inTurn(count: number, call: (n: number) => Promise<HttpResult>): Promise<HttpResult[]> {
    const replies: HttpResult[] = [];
    for (let n = 0; n < count; n++) replies.push(await call(n));
    return replies;
  }

  it('FA-01 past the limit an address gets 429 RATE_LIMITED with Retry-After instead of 401; a valid token from it still passes; nothing is written', async () => {
    // Proves guessing is slowed to the limit while a real caller behind the same address is not refused.
    const s = await start({ failedAuthPerMinute: LIMIT });
    const replies = await inTurn(LIMIT + 3, (n) => guess(s, n));
    expect(codes(replies)).toEqual([...Array(LIMIT).fill('401 UNAUTHENTICATED'), ...Array(3).fill('429 RATE_LIMITED')]);
    const limited = replies[LIMIT]!;
    expect(limited.headers.get('content-type')).toContain('application/problem+json');
    // 5 a minute refill one every 12 s.
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(12);
    expect(limited.body).toMatchObject({ status: 429, code: 'RATE_LIMITED', limit: LIMIT });
    // A missing token counts as a failed authentication too.
    expect((await s.call('GET', '/v1/orders/ord_none')).status).toBe(429);
    const buyer = await s.token(TENANT, 'fa-buyer');
    const mine = await s.call('GET', '/v1/orders/ord_none', { token: buyer });
    expect([mine.status, mine.body.code]).toEqual([404, 'ORDER_NOT_FOUND']);
    expect(await countRows(s.db, 'orders')).toBe(0);
    expect(await countRows(s.db, 'idempotency_keys')).toBe(0);
  });

  it('FA-02 X-Forwarded-For is believed only from a trusted proxy: a spoofed one from any other peer does not evade the limit', async () => {
    // Proves the limit is keyed by the client's real address: forged headers from an untrusted peer
    // share its bucket (also when other proxies are trusted), while behind a trusted proxy each client has its own.
    for (const trustedProxies of [[], ['10.0.0.0/8', '192.0.2.1']]) {
      const s = await start({ failedAuthPerMinute: LIMIT, trustedProxies });
      const spoofed = await inTurn(LIMIT + 2, (n) => guess(s, n, `198.51.100.${n + 1}`));
      expect([trustedProxies, codes(spoofed).slice(LIMIT)]).toEqual([
        trustedProxies,
        ['429 RATE_LIMITED', '429 RATE_LIMITED'],
      ]);
    }
    const behindProxy = await start({ failedAuthPerMinute: LIMIT, trustedProxies: ['127.0.0.1'] });
    const first = await inTurn(LIMIT + 1, (n) => guess(behindProxy, n, '203.0.113.7'));
    expect(codes(first).slice(LIMIT)).toEqual(['429 RATE_LIMITED']);
    // Another client behind the same proxy is not limited by the first one's failures…
    expect(codes([await guess(behindProxy, 99, '203.0.113.8')])).toEqual(['401 UNAUTHENTICATED']);
    // …and the client cannot escape by prepending addresses: the proxy's nearest entry is the client.
    expect(codes([await guess(behindProxy, 100, '198.51.100.9, 203.0.113.7')])).toEqual(['429 RATE_LIMITED']);
  });

  it('FA-03 0 turns the limit off; FLASHPAY_TRUSTED_PROXIES takes IPs and CIDRs and refuses anything else at start', async () => {
    // Proves the switch the tests that send many 401s use, and that a typo cannot silently trust no one.
    const s = await start({ failedAuthPerMinute: 0 });
    const replies = await Promise.all(Array.from({ length: 80 }, (_, n) => guess(s, n)));
    expect(new Set(codes(replies))).toEqual(new Set(['401 UNAUTHENTICATED']));
    expect(loadConfig({}).failedAuthPerMinute).toBe(60);
    expect(
      loadConfig({
        FLASHPAY_TRUSTED_PROXIES: ' 10.0.0.1, 10.1.0.0/16 ,::1,fd00::/8',
        FLASHPAY_FAILED_AUTH_PER_MINUTE: '7',
      }),
    ).toMatchObject({ trustedProxies: ['10.0.0.1', '10.1.0.0/16', '::1', 'fd00::/8'], failedAuthPerMinute: 7 });
    for (const bad of ['proxy.local', '10.0.0.0/33', '10.0.0.1/8/1', '::1/129', '10.0.0/8'])
      expect(() => loadConfig({ FLASHPAY_TRUSTED_PROXIES: bad })).toThrow(/FLASHPAY_TRUSTED_PROXIES/);
    expect(() => loadConfig({ FLASHPAY_FAILED_AUTH_PER_MINUTE: '-1' })).toThrow(/FLASHPAY_FAILED_AUTH_PER_MINUTE/);
  });
});
