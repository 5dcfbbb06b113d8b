import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningChannel } from '../../src/channel/index.ts';
import { client, startTestChannel, type Client } from './support.ts';
import { everyOf } from '../support/every.ts';

const URL_OK = 'http://127.0.0.1:9/n';

describe('channel input validation', () => {
  let channel: RunningChannel;
  let plain: RunningChannel;
  let api: Client;

  beforeAll(async () => {
    channel = await startTestChannel();
    plain = await startTestChannel({ control: false });
    api = client(channel.url);
  });
  afterAll(async () => {
    await channel.close();
    await plain.close();
  });

  const expectValidation = (answer: { status: number; type: string; body: { code?: string } }) => {
    expect(answer.status).toBe(400);
    expect(answer.type).toContain('application/problem+json');
    expect(answer.body.code).toBe('VALIDATION');
  };

  it.each([
    ['missing merchant_order', '/charge', { amount: 100, notify_url: URL_OK }],
    ['missing amount', '/charge', { merchant_order: 'v-1', notify_url: URL_OK }],
    ['missing notify_url', '/charge', { merchant_order: 'v-1', amount: 100 }],
    ['negative amount', '/charge', { merchant_order: 'v-1', amount: -5, notify_url: URL_OK }],
    ['zero amount', '/charge', { merchant_order: 'v-1', amount: 0, notify_url: URL_OK }],
    ['non-integer amount', '/charge', { merchant_order: 'v-1', amount: 19.9, notify_url: URL_OK }],
    ['amount as a string', '/charge', { merchant_order: 'v-1', amount: '100', notify_url: URL_OK }],
    ['notify_url not http', '/charge', { merchant_order: 'v-1', amount: 100, notify_url: 'ftp://x/y' }],
    ['notify_url unparsable', '/charge', { merchant_order: 'v-1', amount: 100, notify_url: 'http://[nope' }],
    ['empty merchant_order', '/close', { merchant_order: '' }],
    ['refund without refund_key', '/refund', { merchant_order: 'v-1', amount: 100 }],
    ['refund with negative amount', '/refund', { merchant_order: 'v-1', refund_key: 'k', amount: -1 }],
    ['body not JSON', '/charge', '{"merchant_order":'],
    ['no body', '/close', undefined],
  ])('refuses %s with 400 VALIDATION and leaves the ledger untouched', async (_name, path, body) => {
    // Proves bad input is stopped at the edge: problem+json, no line, not even counted as a request.
    expectValidation(await api.post(path, body));
    expect((await api.statement()).lines).toEqual([]);
    const requests = (await api.get('/_control/requests')).body as Record<string, { total: number }>;
    expect(everyOf(Object.values(requests), (op) => op.total === 0)).toBe(true);
  });

  it.each([
    ['unknown op', { op: 'capture', kind: 'ERROR_500' }],
    ['unknown kind', { op: 'charge', kind: 'EXPLODE' }],
    ['DECLINE on a refund', { op: 'refund', kind: 'DECLINE' }],
    ['delay without ms', { op: 'charge', kind: 'DELAY_RESPONSE' }],
    ['negative times', { op: 'charge', kind: 'ERROR_500', times: -1 }],
    ['misspelt field', { op: 'charge', kind: 'ERROR_500', merchantOrder: 'x' }],
  ])('refuses a fault with %s, and arms nothing', async (_name, rule) => {
    // Proves a mistyped fault script is an error, not a silently different experiment.
    expectValidation(await api.fault(rule));
    expect((await api.get('/_control/faults')).body).toEqual([]);
    expect((await api.charge(`after-${_name.replace(/\W/g, '-')}`, 100)).body.result).toBe('CHARGED');
  });

  it('refuses bad callback settings and unknown held ids', async () => {
    // Proves the callback script is validated as strictly as the faults.
    expectValidation(await api.post('/_control/callbacks', { mode: 'LATER' }));
    expectValidation(await api.post('/_control/callbacks', { mode: 'AUTO', delay_ms: [50, 10] }));
    expectValidation(await api.post('/_control/callbacks/release', { ids: ['held_does_not_exist'] }));
    expectValidation(await api.post('/_control/settings', { notify_max_attempts: 0 }));
    expect((await api.get('/_control/callbacks')).body).toMatchObject({ mode: 'AUTO', duplicates: 1 });
  });

  it('has no control API without control: every /_control route is 404', async () => {
    // Proves a channel run as a stand-in provider cannot be scripted by whoever reaches it.
    const bare = client(plain.url);
    for (const [method, path] of [
      ['POST', '/_control/reset'],
      ['POST', '/_control/faults'],
      ['GET', '/_control/requests'],
      ['GET', '/_control/notifications'],
      ['GET', '/_control/callbacks/held'],
    ] as const) {
      const answer = await bare.call(method, path, method === 'POST' ? { op: 'charge', kind: 'ERROR_500' } : undefined);
      expect(answer.status).toBe(404);
      expect(answer.body.code).toBe('NOT_FOUND');
    }
    expect((await bare.charge('plain-1', 100)).body.result).toBe('CHARGED');
  });
});
