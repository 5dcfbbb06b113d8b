import { describe, expect, it } from 'vitest';
import { channelDocument, serviceDocument } from '../../src/openapi.export.ts';
import { ERROR_STATUS } from '../../src/platform/errors.ts';
import { everyOf } from '../support/every.ts';

type Response = { description?: string; headers?: Record<string, unknown>; content?: Record<string, { schema: { examples?: unknown[]; properties?: { code?: { enum?: string[] } } }; example?: unknown }> };
type Operation = { operationId?: string; summary?: string; description?: string; security?: unknown[]; parameters?: Array<{ in: string; name: string; required?: boolean }>; requestBody?: { content: Record<string, { example?: unknown; schema?: { examples?: unknown[] } }> }; responses: Record<string, Response> };
type Doc = { paths: Record<string, Record<string, Operation>>; webhooks?: Record<string, unknown>; security?: unknown[] };

const operations = (doc: Doc) => Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })));
const hasExample = (media: { example?: unknown; schema?: { examples?: unknown[] } }) => media.example !== undefined || (media.schema?.examples?.length ?? 0) > 0;

// What an integrator needs from the document, checked for every operation (Redocly checks the rest).
describe('the OpenAPI documents are complete', () => {
  it('every operation of the service: id, summary, description, examples, and problem+json errors with codes of their own status', async () => {
    const doc = (await serviceDocument()) as Doc;
    const all = operations(doc);
    expect(all.length).toBeGreaterThanOrEqual(19);
    for (const { name, op } of all) {
      expect(op.operationId, name).toBeTruthy();
      expect(op.summary, name).toBeTruthy();
      expect(op.description, name).toBeTruthy();
      for (const media of Object.values(op.requestBody?.content ?? {})) expect(hasExample(media), `${name} request example`).toBe(true);
      expect(Object.keys(op.responses), name).toEqual(expect.arrayContaining(['500', '503']));
      for (const [status, answer] of Object.entries(op.responses)) {
        const media = Object.entries(answer.content ?? {});
        expect(media.length, `${name} ${status}`).toBe(1);
        const [type, body] = media[0] as [string, NonNullable<Response['content']>[string]];
        expect(hasExample(body), `${name} ${status} example`).toBe(true);
        if (Number(status) < 400) continue;
        expect(type, `${name} ${status}`).toBe('application/problem+json');
        for (const code of body.schema.properties?.code?.enum ?? ['missing']) expect(ERROR_STATUS[code as keyof typeof ERROR_STATUS], `${name} ${status} ${code}`).toBe(Number(status));
      }
    }
  });

  it('keys, signatures and webhooks are where an integrator looks for them', async () => {
    const doc = (await serviceDocument()) as Doc;
    for (const [path, method] of [['/v1/orders', 'post'], ['/v1/orders/{id}/pay', 'post']] as const) {
      const op = doc.paths[path]?.[method];
      expect(op?.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ in: 'header', name: 'idempotency-key', required: true })]));
      expect(Object.keys(op?.responses['200']?.headers ?? op?.responses['201']?.headers ?? {})).toContain('Idempotent-Replayed');
    }
    expect(Object.keys(doc.paths['/v1/orders']?.post?.responses['201']?.headers ?? {})).toContain('Location');
    expect(doc.paths['/v1/payment-notifications']?.post?.security).toEqual([{ flashpaySignature: [] }]);
    expect(doc.paths['/v1/fulfillment/events']?.post?.security).toEqual([{ flashpaySignature: [] }]);
    expect(doc.paths['/v1/payment-notifications']?.post?.requestBody).toBeDefined();
    expect(Object.keys(doc.webhooks ?? {})).toEqual(['paymentNotification', 'orderEvent']);
    expect(doc.security).toEqual([{ bearer: [] }]);
  });

  it('the provider double’s document describes every operation with an example answer', async () => {
    const doc = (await channelDocument()) as Doc;
    const all = operations(doc);
    expect(all.length).toBeGreaterThanOrEqual(17);
    for (const { name, op } of all) {
      expect(op.operationId && op.summary && op.description, name).toBeTruthy();
      const ok = op.responses['200'];
      expect(ok && everyOf(Object.values(ok.content ?? {}), hasExample), name).toBe(true);
    }
  });
});
