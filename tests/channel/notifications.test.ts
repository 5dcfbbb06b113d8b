import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningChannel } from '../../src/channel/index.ts';
import { mulberry32 } from '../../src/channel/prng.ts';
import { verifySignature } from '../../src/platform/signature.ts';
import { client, SECRET, startReceiver, startTestChannel, waitFor, type Client, type Receiver } from './support.ts';

describe('channel notifications', () => {
  let channel: RunningChannel;
  let api: Client;
  let receiver: Receiver | undefined;

  beforeAll(async () => {
    channel = await startTestChannel({ notifyRetryBaseMs: 20, notifyMaxAttempts: 4 });
    api = client(channel.url);
  });
  afterAll(async () => channel.close());
  beforeEach(async () => {
    await api.reset();
  });
  afterEach(async () => {
    await api.reset(); // cancels retries still aimed at the receiver before it goes away
    await receiver?.close();
    receiver = undefined;
  });

  const notifications = async () =>
    (await api.get('/_control/notifications')).body as {
      notify_id: string;
      status: string;
      attempts: number;
      kind: string;
    }[];

  it('signs every notification: it verifies with the shared secret and fails with another', async () => {
    // Proves a receiver can authenticate the channel with Flashpay-Signature over the raw body.
    receiver = await startReceiver();
    const charged = await api.charge('sig-1', 1990, receiver.url);
    const [arrival] = await receiver.waitForArrivals(1);
    expect(arrival?.body).toEqual({
      notify_id: expect.stringMatching(/^ntf_/),
      merchant_order: 'sig-1',
      kind: 'CHARGED',
      amount: 1990,
      txn: charged.body.txn,
    });
    expect(verifySignature(SECRET, arrival?.signature, arrival?.rawBody ?? '', 300)).toEqual({ ok: true });
    expect(verifySignature('another-secret', arrival?.signature, arrival?.rawBody ?? '', 300).ok).toBe(false);
    await waitFor(notifications, (list) => list[0]?.status === 'DELIVERED');
  });

  it('HOLD keeps notifications; release in reverse order delivers them in reverse order', async () => {
    // Proves tests decide the arrival order: a refund's notification can be made to arrive before its charge's.
    receiver = await startReceiver();
    await api.post('/_control/callbacks', { mode: 'HOLD' });
    await api.charge('hold-1', 100, receiver.url);
    await api.charge('hold-2', 200, receiver.url);
    await api.refund('hold-1', 'rk-hold-1', 100);
    const held = (await api.get('/_control/callbacks/held')).body as {
      id: string;
      merchant_order: string;
      kind: string;
    }[];
    expect(held.map((h) => [h.merchant_order, h.kind])).toEqual([
      ['hold-1', 'CHARGED'],
      ['hold-2', 'CHARGED'],
      ['hold-1', 'REFUNDED'],
    ]);
    expect(receiver.arrivals).toEqual([]);
    expect((await notifications()).map((n) => n.status)).toEqual(['HELD', 'HELD', 'HELD']);
    const released = await api.post('/_control/callbacks/release', { ids: held.map((h) => h.id).reverse() });
    expect(released.status).toBe(200);
    // Each first attempt completes before the next starts, so all three are in by the reply.
    expect(receiver.arrivals.map((a) => [a.body.merchant_order, a.body.kind])).toEqual([
      ['hold-1', 'REFUNDED'],
      ['hold-2', 'CHARGED'],
      ['hold-1', 'CHARGED'],
    ]);
    expect((await api.get('/_control/callbacks/held')).body).toEqual([]);
  });

  it('duplicates: 3 delivers each notification three times under one notify_id', async () => {
    // Proves the at-least-once shape a receiver must deduplicate by notify_id.
    receiver = await startReceiver();
    await api.post('/_control/callbacks', { mode: 'AUTO', duplicates: 3 });
    await api.charge('dup-1', 100, receiver.url);
    const arrivals = await receiver.waitForArrivals(3);
    expect(new Set(arrivals.map((a) => a.body.notify_id)).size).toBe(1);
    expect(arrivals.map((a) => a.rawBody)).toEqual([arrivals[0]?.rawBody, arrivals[0]?.rawBody, arrivals[0]?.rawBody]);
    const [tracked] = await waitFor(notifications, (list) => list[0]?.status === 'DELIVERED');
    expect(tracked).toMatchObject({ notify_id: arrivals[0]?.body.notify_id, attempts: 3 });
  });

  it('retries with backoff: a receiver answering 500 twice then 200 gets it on the third attempt', async () => {
    // Proves a failing receiver (storage error) is retried until it answers 200, and then left alone.
    receiver = await startReceiver((index) => (index < 2 ? 500 : 200));
    await api.charge('retry-1', 100, receiver.url);
    const arrivals = await receiver.waitForArrivals(3);
    expect(new Set(arrivals.map((a) => a.body.notify_id)).size).toBe(1);
    const [tracked] = await waitFor(notifications, (list) => list[0]?.status === 'DELIVERED');
    expect(tracked?.attempts).toBe(3);
    expect(receiver.arrivals).toHaveLength(3);
  });

  it('gives up after the bounded number of attempts and shows it in /_control/notifications', async () => {
    // Proves retries are bounded (4 attempts here) and the outcome is visible, not silent.
    receiver = await startReceiver(() => 503);
    await api.charge('dead-1', 100, receiver.url);
    const [tracked] = await waitFor(notifications, (list) => list[0]?.status === 'GIVEN_UP');
    expect(tracked).toMatchObject({ kind: 'CHARGED', attempts: 4 });
    expect(receiver.arrivals).toHaveLength(4);
    const settings = await api.post('/_control/settings', { notify_max_attempts: 2 });
    expect(settings.body).toEqual({ notify_retry_base_ms: 20, notify_max_attempts: 2 });
  });

  it('never delays the charge reply: it is answered while the receiver is still down', async () => {
    // Proves notifications are asynchronous; the ledger answer does not wait on delivery.
    await api.post('/_control/callbacks', { mode: 'AUTO', delay_ms: [1000, 1000] });
    const started = Date.now();
    const charged = await api.charge('async-1', 100, 'http://127.0.0.1:9/down');
    expect(charged.body.result).toBe('CHARGED');
    expect(Date.now() - started).toBeLessThan(1000);
    expect((await notifications())[0]).toMatchObject({ status: 'PENDING', attempts: 0 });
  });

  it('callbacks/send delivers a forged or late notification now, to the charge notify_url by default', async () => {
    // Proves tests can inject notifications the ledger never produced (e.g. a wrong amount).
    receiver = await startReceiver();
    const charged = await api.charge('forge-1', 100, receiver.url);
    await receiver.waitForArrivals(1);
    const sent = await api.post('/_control/callbacks/send', {
      merchant_order: 'forge-1',
      kind: 'CHARGED',
      amount: 999,
    });
    expect(sent.body).toMatchObject({ status: 'DELIVERED', attempts: 1 });
    expect(receiver.arrivals[1]?.body).toMatchObject({ merchant_order: 'forge-1', amount: 999, txn: charged.body.txn });
    expect(receiver.arrivals[1]?.body.notify_id).not.toBe(receiver.arrivals[0]?.body.notify_id);
    expect(
      (await api.post('/_control/callbacks/send', { merchant_order: 'nobody', kind: 'REFUNDED', amount: 1 })).body.code,
    ).toBe('VALIDATION');
    expect((await api.statement()).lines).toHaveLength(1);
  });

  it('draws callback delays from a seeded PRNG, so a seed repeats its sequence', () => {
    // Proves runs are repeatable: the same seed yields the same draws.
    const a = mulberry32(42);
    const b = mulberry32(42);
    const drawsA = Array.from({ length: 5 }, a);
    expect(Array.from({ length: 5 }, b)).toEqual(drawsA);
    expect(Array.from({ length: 5 }, mulberry32(43))).not.toEqual(drawsA);
  });
});
