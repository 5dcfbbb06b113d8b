import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpTimeoutError, httpRequest, keepAliveAgents } from '../../src/platform/http.client.ts';

// The outgoing HTTP helper (src/platform/http.client.ts) that the provider client, the fulfilment
// client, the outbox's webhook and the fake channel's notifier use instead of fetch, against a
// real server on loopback: the answers, a timeout (never read as an answer), an answer cut off,
// an abort, a refused connection, and sockets kept alive between calls.

describe('outgoing HTTP: node:http with keep-alive agents', () => {
  let server: http.Server;
  let base: string;
  const peers = new Set<string>();
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      peers.add(`${req.socket.remotePort}`);
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        if (req.url === '/echo') {
          res.writeHead(201, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ method: req.method, body, type: req.headers['content-type'] }));
        } else if (req.url === '/slow') setTimeout(() => res.end('late'), 500);
        else if (req.url === '/cut') {
          res.writeHead(200, { 'content-length': '100' });
          res.write('partial');
          setTimeout(() => res.destroy(), 20);
        } else if (req.url === '/big') res.end('x'.repeat(10_000));
        else res.writeHead(503).end('down');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => new Promise<void>((resolve) => server.close(() => resolve())));

  it('HC-01 a POST gets its status and whole body; a GET with none; maxChars keeps the head of a long answer', async () => {
    const posted = await httpRequest(`${base}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
      timeoutMs: 2_000,
    });
    expect(posted.status).toBe(201);
    expect(JSON.parse(posted.text)).toEqual({ method: 'POST', body: '{"a":1}', type: 'application/json' });
    expect(await httpRequest(`${base}/nowhere`, { timeoutMs: 2_000 })).toEqual({ status: 503, text: 'down' });
    const head = await httpRequest(`${base}/big`, { timeoutMs: 2_000, maxChars: 10 });
    expect(head).toEqual({ status: 200, text: 'x'.repeat(10) });
  });

  it('HC-02 no answer in time is a TimeoutError, an answer cut off and an abort are errors: none of them is an answer', async () => {
    const timedOut = await httpRequest(`${base}/slow`, { timeoutMs: 100 }).catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(HttpTimeoutError);
    expect((timedOut as Error).name).toBe('TimeoutError');
    await expect(httpRequest(`${base}/cut`, { timeoutMs: 2_000 })).rejects.toThrow();
    const controller = new AbortController();
    const aborted = httpRequest(`${base}/slow`, { timeoutMs: 2_000, signal: controller.signal });
    controller.abort(new Error('closing'));
    await expect(aborted).rejects.toThrow('closing');
    const refused = await httpRequest('http://127.0.0.1:1/', { timeoutMs: 2_000 }).catch((e: unknown) => e);
    expect((refused as { code?: string }).code).toBe('ECONNREFUSED');
  });

  it('HC-03 calls one after another reuse one kept-alive socket', async () => {
    const agents = keepAliveAgents(4);
    peers.clear();
    for (let i = 0; i < 5; i++)
      expect((await httpRequest(`${base}/echo`, { timeoutMs: 2_000 }, agents)).status).toBe(201);
    expect(peers.size).toBe(1);
    agents.http.destroy();
  });
});
