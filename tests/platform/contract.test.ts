import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Type } from 'typebox';
import type { FastifyInstance } from 'fastify';
import { takeContractViolations } from '../../src/platform/contract.ts';
import { jsonAnswer } from '../../src/platform/openapi.ts';
import { startStack, type Stack } from '../support/stack.ts';
import { eventually } from '../support/payments.ts';

// A test-only route whose document says: 200 with {ok: boolean}, nothing else.
function planted(app: FastifyInstance): void {
  const schema = {
    operationId: 'planted',
    tags: ['test'],
    response: { 200: jsonAnswer('ok', Type.Object({ ok: Type.Boolean() })) },
  };
  app.get<{ Querystring: { mode?: string } }>(
    '/v1/planted',
    { schema: { ...schema, querystring: Type.Object({ mode: Type.Optional(Type.String()) }) } },
    async (request, reply) => {
      const mode = request.query.mode;
      if (mode === 'status') return reply.code(418).send({ ok: true });
      if (mode === 'header') return reply.header('X-Leak', 'secret').send({ ok: true });
      if (mode === 'body') return reply.type('application/json').send('{"ok":"yes"}');
      if (mode === 'media') return reply.type('text/plain').send('ok');
      return { ok: true };
    },
  );
}

describe('the contract check holds every response to the OpenAPI document', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack({ routes: [planted] });
  });
  afterAll(async () => stack.close());

  it('passes a documented answer and flags an undocumented status, header, media type and body shape', async () => {
    // Proves the suite-wide hook would fail a test on any drift between the service and /docs/json.
    expect((await stack.call('GET', '/v1/planted')).status).toBe(200);
    expect(takeContractViolations()).toEqual([]);
    for (const [mode, problem] of [
      ['status', /status 418 is not documented/],
      ['header', /header x-leak is not documented/i],
      ['body', /body does not match/],
      ['media', /media type text\/plain is not documented/],
    ] as const) {
      await stack.call('GET', `/v1/planted?mode=${mode}`);
      // Checked once the answer has gone out (onResponse): wait for the check, never for a time.
      const found = await eventually(
        async () => takeContractViolations(),
        (v) => v.length > 0,
      );
      expect(found, mode).toHaveLength(1);
      expect(found[0]?.problem).toMatch(problem);
    }
  });
});

describe('the provider double serves its own document', () => {
  it('lists every ledger and control operation at /docs/json, and the suite checks its answers against it', async () => {
    // Proves an integrator testing against the double can read (and generate from) its contract too.
    const { startChannel } = await import('../../src/channel/index.ts');
    const channel = await startChannel({ notifySecret: 'doc-test', control: true });
    try {
      const doc = (await (await fetch(`${channel.url}/docs/json`)).json()) as {
        paths: Record<string, Record<string, { operationId: string }>>;
      };
      const operations = Object.values(doc.paths).flatMap((methods) =>
        Object.values(methods).map((op) => op.operationId),
      );
      expect(operations).toEqual(
        expect.arrayContaining([
          'charge',
          'getCharge',
          'close',
          'refund',
          'getStatement',
          'armFault',
          'releaseCallbacks',
          'sendNotification',
        ]),
      );
      await fetch(`${channel.url}/charge`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ merchant_order: 'x', amount: 0, notify_url: 'http://127.0.0.1:1/' }),
      });
      expect(takeContractViolations()).toEqual([]);
    } finally {
      await channel.close();
    }
  });
});
