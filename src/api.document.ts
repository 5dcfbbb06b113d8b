import type { SwaggerOptions } from '@fastify/swagger';
import { notificationWebhook } from './payments/index.ts';
import { orderEventWebhook } from './fulfillment/index.ts';
import { DEFAULT_SERVER, SIGNATURE_DESCRIPTION } from './platform/openapi.ts';

type Doc = Record<string, unknown> & { paths?: Record<string, Record<string, Record<string, unknown>>> };

const DESCRIPTION = `Flash-sale orders and payments that never oversell, never charge twice, never lose an order.

**Errors** are RFC 9457 problem details (\`application/problem+json\`) with a stable \`code\`; branch on \`code\`, never on \`title\` or \`detail\`. Each operation lists the codes it can answer with.

**Idempotency.** \`POST /v1/orders\` and \`POST /v1/orders/{id}/pay\` need an \`Idempotency-Key\` header. The same key with the same request replays the first answer byte for byte (\`Idempotent-Replayed: true\`); with another request: 422 \`IDEMPOTENCY_KEY_REUSED\`. 400s, 401s and 5xx are not stored: retrying with the same key is always safe.

**Authentication.** \`Authorization: Bearer <JWT>\` (HS256; claims \`sub\` user, \`tid\` tenant, \`scope\` \`buyer\` or \`admin\`); \`flashpay token --tenant T --user U\` prints one. The provider's notifications and the relay's events are signed instead (see the \`flashpaySignature\` scheme and \`webhooks\`).

A typed client ships as the npm workspace package \`@flashpay/client\`.`;

/** Marks bodies that may be omitted: Fastify's body schema alone makes @fastify/swagger require one. */
function markOptionalBodies(doc: Doc): Doc {
  for (const methods of Object.values(doc.paths ?? {})) {
    for (const operation of Object.values(methods)) {
      if (!operation['x-body-optional']) continue;
      delete operation['x-body-optional'];
      const body = operation.requestBody as { required?: boolean } | undefined;
      if (body) body.required = false;
    }
  }
  return doc;
}

export const swaggerOptions: SwaggerOptions = {
  openapi: {
    openapi: '3.1.0',
    info: {
      title: 'flashpay',
      version: '0.1.0',
      description: DESCRIPTION,
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [DEFAULT_SERVER],
    tags: [
      { name: 'orders', description: 'Buyers: create, pay, cancel and read orders' },
      { name: 'wallet', description: 'Buyers: the stored balance' },
      { name: 'admin', description: 'Operators (scope `admin`): SKUs, orders, recovery, outbox, reconciliation' },
      { name: 'provider', description: 'What the payment provider calls' },
      { name: 'events', description: 'What the outbox relay delivers' },
      { name: 'development', description: "Development only: the storefront's demo sign-in (403 in production)" },
    ],
    components: {
      securitySchemes: {
        bearer: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'HS256, claims `sub`, `tid`, `scope`',
        },
        flashpaySignature: {
          type: 'apiKey',
          in: 'header',
          name: 'Flashpay-Signature',
          description: SIGNATURE_DESCRIPTION,
        },
      },
    },
    security: [{ bearer: [] }],
    // TypeBox schemas are plain JSON Schema 2020-12, which OpenAPI 3.1 webhooks take as they are.
    webhooks: { paymentNotification: notificationWebhook, orderEvent: orderEventWebhook } as unknown as Record<
      string,
      never
    >,
  },
  // Doc-only parts of a route (headers and bodies the handler checks itself) join the document here.
  transform({ schema, url }) {
    if (!schema || (!schema.docHeaders && !schema.docBody)) return { schema, url };
    const { docHeaders, docBody, ...rest } = schema;
    return {
      schema: { ...rest, ...(docHeaders ? { headers: docHeaders } : {}), ...(docBody ? { body: docBody } : {}) },
      url,
    };
  },
  transformObject: (document) =>
    'openapiObject' in document
      ? (markOptionalBodies(document.openapiObject as Doc) as typeof document.openapiObject)
      : document.swaggerObject,
};
