import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningChannel } from '../../src/channel/index.ts';
import { client, startTestChannel, waitFor, type Client } from './support.ts';

describe('channel faults', () => {
  let channel: RunningChannel;
  let api: Client;

  beforeAll(async () => {
    channel = await startTestChannel();
    api = client(channel.url);
  });
  afterAll(async () => channel.close());
  beforeEach(async () => {
    await api.reset();
  });

  it('DELAY_RESPONSE: the client times out, yet the charge is on the ledger', async () => {
    // Proves the "unknown outcome" case: a timeout does not mean the charge failed.
    await api.fault({ op: 'charge', kind: 'DELAY_RESPONSE', merchant_order: 'slow-1', ms: 600 });
    const call = api.call(
      'POST',
      '/charge',
      { merchant_order: 'slow-1', amount: 1990, notify_url: 'http://127.0.0.1:9/x' },
      { signal: AbortSignal.timeout(300) },
    );
    await expect(call).rejects.toThrow(/aborted|timeout/i);
    expect((await api.query('slow-1')).body).toMatchObject({ status: 'CHARGED', amount: 1990 });
    expect((await api.statement()).lines).toHaveLength(1);
  });

  it('RESET_CONNECTION drops the socket and leaves the ledger untouched; the next charge works', async () => {
    // Proves a dropped connection is a fault before the ledger, and the fault is consumed.
    await api.fault({ op: 'charge', kind: 'RESET_CONNECTION' });
    await expect(api.charge('reset-1', 500)).rejects.toThrow();
    expect((await api.statement()).lines).toEqual([]);
    expect((await api.query('reset-1')).body.status).toBe('NOT_FOUND');
    expect((await api.charge('reset-1', 500)).body.result).toBe('CHARGED');
    expect((await api.statement()).lines).toHaveLength(1);
  });

  it('ERROR_500 answers 500 and leaves the ledger untouched; the next charge works', async () => {
    // Proves a provider 500 is not a charge, and the fault hits exactly the requests it names.
    await api.fault({ op: 'charge', kind: 'ERROR_500', merchant_order: 'err-1', times: 2 });
    for (let i = 0; i < 2; i++)
      expect(await api.charge('err-1', 500)).toMatchObject({ status: 500, body: { code: 'INTERNAL' } });
    expect((await api.statement()).lines).toEqual([]);
    expect((await api.charge('err-1', 500)).body.result).toBe('CHARGED');
    expect((await api.statement()).lines).toHaveLength(1);
    expect((await api.get('/_control/requests')).body.charge.by_order['err-1']).toBe(3);
  });

  it('a times:1 fault hits exactly one of ten concurrent requests, and only its own merchant order', async () => {
    // Proves faults are consumed atomically and scoped by merchant_order.
    await api.charge('scoped', 100);
    await api.fault({ op: 'query', kind: 'ERROR_500', merchant_order: 'scoped' });
    expect((await api.query('other')).status).toBe(200);
    const answers = await Promise.all(Array.from({ length: 10 }, () => api.query('scoped')));
    expect(answers.filter((answer) => answer.status === 500)).toHaveLength(1);
    expect(answers.filter((answer) => answer.body.status === 'CHARGED')).toHaveLength(9);
    expect((await api.get('/_control/faults')).body).toEqual([]);
  });

  it('DELAY_REQUEST on a refund holds it before the ledger; close and query faults apply too', async () => {
    // Proves every op can be faulted, and a held request has not touched the ledger yet.
    await api.charge('held-refund', 700);
    await api.fault({ op: 'refund', kind: 'DELAY_REQUEST', ms: 200 });
    const refund = api.refund('held-refund', 'rk-held', 700);
    await waitFor(
      () => api.get('/_control/requests'),
      (r) => r.body.refund.total === 1,
    );
    expect((await api.query('held-refund')).body.status).toBe('CHARGED');
    expect((await refund).body.result).toBe('REFUNDED');
    await api.fault({ op: 'close', kind: 'ERROR_500' });
    expect((await api.close('never-charged')).status).toBe(500);
    expect((await api.query('never-charged')).body.status).toBe('NOT_FOUND');
  });

  it('reset empties the ledger, the fault rules, the request counts and the held callbacks', async () => {
    // Proves one call returns the channel to a clean slate between tests.
    await api.charge('r-1', 100);
    await api.fault({ op: 'charge', kind: 'DECLINE', times: 5 });
    await api.post('/_control/callbacks', { mode: 'HOLD' });
    await api.charge('r-2', 100);
    expect((await api.get('/_control/callbacks/held')).body).toHaveLength(1);
    await api.reset();
    expect(await api.statement()).toEqual({ lines: [], net: 0 });
    expect((await api.get('/_control/faults')).body).toEqual([]);
    expect((await api.get('/_control/callbacks/held')).body).toEqual([]);
    expect((await api.get('/_control/requests')).body.charge).toEqual({ total: 0, by_order: {} });
    expect((await api.get('/_control/callbacks')).body.mode).toBe('AUTO');
    expect((await api.charge('r-2', 100)).body.result).toBe('CHARGED');
  });
});
