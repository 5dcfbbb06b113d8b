import { appendFileSync } from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

// Test mode only (FLASHPAY_CONTRACT_CHECK=1, set for the whole suite in vitest.config.ts): every
// response a server sends is checked against the OpenAPI document it serves. Anything undocumented
// (a status, a media type, an app header, a body shape) is a violation: recorded in this process
// for the test that caused it (tests/support/contract.ts) and appended to FLASHPAY_CONTRACT_LOG so
// that servers in child processes are held to the document too (checked at the end of the run).

// One compiler per process, and each distinct schema compiled once: test files start many servers
// with the same documents, and many answers share a schema.
const ajv = new Ajv({ strict: false, allErrors: false, validateFormats: true });
addFormats.default(ajv);
const compiled = new Map<string, ValidateFunction>();

function compile(schema: object): ValidateFunction {
  const text = JSON.stringify(schema);
  let validate = compiled.get(text);
  if (!validate) {
    validate = ajv.compile(schema);
    compiled.set(text, validate);
  }
  return validate;
}

export interface ContractViolation {
  route: string;
  status: number;
  problem: string;
}

const registry: ContractViolation[] = ((
  globalThis as { __flashpayContract?: ContractViolation[] }
).__flashpayContract ??= []);

let reportToFile = true;

/** A test runner's process collects its own violations per test instead of leaving them for the end. */
export function collectContractViolationsPerTest(): void {
  reportToFile = false;
}

/** Violations seen in this process since the last call (which clears them). */
export function takeContractViolations(): ContractViolation[] {
  return registry.splice(0, registry.length);
}

export function contractCheckEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.FLASHPAY_CONTRACT_CHECK === '1';
}

// Transport, caching and browser-hardening headers any response may carry; anything else (every
// header a client is meant to read) must be in the document for that operation and status.
const TRANSPORT = new Set([
  'content-type',
  'content-length',
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'vary',
  'cache-control',
  'etag',
  'x-content-type-options',
  'x-frame-options',
  'strict-transport-security',
  'content-security-policy',
  'referrer-policy',
  'cross-origin-opener-policy',
  'cross-origin-resource-policy',
]);

type Operation = {
  responses?: Record<string, { headers?: Record<string, unknown>; content?: Record<string, { schema?: object }> }>;
};

/**
 * The document's path of a route: `:id` is `{id}`; a trailing wildcard (`/fulfilments/*`, whose
 * rest may hold slashes) is documented under a named parameter (`/fulfilments/{key}`).
 */
function documentPath(url: string, paths: Record<string, unknown>): string {
  const path = url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
  if (!path.endsWith('*')) return path;
  const prefix = path.slice(0, -1);
  return (
    Object.keys(paths).find((p) => p.startsWith(prefix) && /^\{[A-Za-z0-9_]+\}$/.test(p.slice(prefix.length))) ?? path
  );
}

export function installContractCheck(
  app: FastifyInstance,
  documentOf: () => { paths?: Record<string, Record<string, Operation>> },
): void {
  const validators = new Map<string, ValidateFunction>();

  function report(violation: ContractViolation): void {
    registry.push(violation);
    const file = process.env.FLASHPAY_CONTRACT_LOG;
    if (file && reportToFile) appendFileSync(file, `${JSON.stringify(violation)}\n`);
  }

  function check(request: FastifyRequest, reply: FastifyReply, payload: unknown): void {
    const url = request.routeOptions.url;
    // No route matched (the 404 handler) or a route kept out of the document on purpose.
    if (!url || request.routeOptions.schema?.hide || url.startsWith('/docs')) return;
    const path = documentPath(url, documentOf().paths ?? {});
    const method = request.method.toLowerCase();
    const route = `${request.method} ${path}`;
    const status = reply.statusCode;
    const operation = documentOf().paths?.[path]?.[method];
    if (!operation) return report({ route, status, problem: 'the operation is not in the document' });
    const answer =
      operation.responses?.[String(status)] ??
      operation.responses?.[`${String(status)[0]}XX`] ??
      operation.responses?.default;
    if (!answer) return report({ route, status, problem: `status ${status} is not documented` });

    const documented = new Set(Object.keys(answer.headers ?? {}).map((h) => h.toLowerCase()));
    for (const name of Object.keys(reply.getHeaders())) {
      const lower = name.toLowerCase();
      if (!TRANSPORT.has(lower) && !lower.startsWith('access-control-') && !documented.has(lower))
        report({ route, status, problem: `header ${name} is not documented` });
    }

    const mediaType =
      String(reply.getHeader('content-type') ?? '')
        .split(';')[0]
        ?.trim() ?? '';
    if (!answer.content) {
      if (payload !== undefined && payload !== null && String(payload) !== '')
        report({ route, status, problem: 'a body was sent where none is documented' });
      return;
    }
    const media = answer.content[mediaType];
    if (!media) return report({ route, status, problem: `media type ${mediaType || '(none)'} is not documented` });
    if (!media.schema || (typeof payload !== 'string' && !Buffer.isBuffer(payload))) return;
    let body: unknown = String(payload);
    // A text answer (Alipay's plain `success`) is checked as the string it is; everything else is JSON.
    if (!mediaType.startsWith('text/'))
      try {
        body = JSON.parse(String(payload));
      } catch {
        return report({ route, status, problem: 'the body is not JSON' });
      }
    const key = `${route} ${status} ${mediaType}`;
    let validate = validators.get(key);
    if (!validate) validators.set(key, (validate = compile(media.schema)));
    if (!validate(body))
      report({
        route,
        status,
        problem: `body does not match: ${ajv.errorsText(validate.errors)} in ${String(payload).slice(0, 300)}`,
      });
  }

  // Each answer is checked only once it has been sent: the check must not slow the answer down (a
  // pay has a 300 ms budget for the provider). Each schema is compiled when an answer first needs it,
  // not at boot: compiling all ~200 of the document's cost every spawned test server about 0.5 s of
  // CPU, and a server answers a handful of them (issue 49).
  const sent = new WeakMap<FastifyRequest, unknown>();
  app.addHook('onSend', async (request, _reply, payload) => {
    sent.set(request, payload);
    return payload;
  });
  app.addHook('onResponse', async (request, reply) => {
    try {
      check(request, reply, sent.get(request));
    } catch (error) {
      report({
        route: `${request.method} ${request.url}`,
        status: reply.statusCode,
        problem: `checker failed: ${(error as Error).message}`,
      });
    }
  });
}
