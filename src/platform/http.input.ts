import http from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, problem, type Problem } from './errors.ts';

// Every input gets a problem+json answer with a stable code, including the ones Fastify and Node
// answer on their own (bad percent-encoding, over-long path parameters, unparsable requests).

/**
 * C0 controls but TAB, LF and CR; DEL; C1 controls. NUL in particular: PostgreSQL refuses it in
 * text (a 500 where the client deserves a 400), and it truncates strings in C libraries and logs.
 */
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;
const CONTROL_IN_LINE = /[\u0000-\u001f\u007f-\u009f]/;

/** Headers our code reads; Node's parser already refuses NUL, CR and LF in every header value. */
const CHECKED_HEADERS = ['authorization', 'idempotency-key', 'flashpay-signature', 'prefer', 'content-type'] as const;

// A JSON body under the size limit is small; this bounds the walk of a pathological nesting anyway.
const MAX_DEPTH = 32;

const codePoint = (text: string) => `U+${(text.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * Our JSON parser is plain JSON.parse (signatures need the raw text), so it does not do what
 * Fastify's secure-json-parse would: refuse the keys that poison prototypes when a body is merged.
 */
function isPoisoning(key: string, value: unknown): boolean {
  if (key === '__proto__') return true;
  return key === 'constructor' && typeof value === 'object' && value !== null && 'prototype' in value;
}

/** The first path (`body.lines[0].sku`) at which a string holds a control character, if any. */
function findControl(
  value: unknown,
  where: string,
  depth: number,
  pattern: RegExp,
): { where: string; char: string } | undefined {
  if (depth > MAX_DEPTH) return { where, char: '' };
  if (typeof value === 'string') {
    const match = pattern.exec(value);
    return match ? { where, char: match[0] } : undefined;
  }
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = findControl(item, `${where}[${i}]`, depth + 1, pattern);
      if (found) return found;
    }
    return undefined;
  }
  if (typeof value === 'object' && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      const keyMatch = CONTROL_IN_LINE.exec(key);
      if (keyMatch) return { where: `${where} (a field name)`, char: keyMatch[0] };
      if (isPoisoning(key, item)) return { where: `${where}.${key}`, char: 'PROTO' };
      const found = findControl(item, `${where}.${key}`, depth + 1, pattern);
      if (found) return found;
    }
  }
  return undefined;
}

/**
 * Whether findControl would find nothing: the same walk (depth bound first, arrays by index, own
 * keys), without building a path string per field. Every request takes this one; only a refused
 * one walks again to name where.
 */
function isClean(value: unknown, depth: number, pattern: RegExp): boolean {
  if (depth > MAX_DEPTH) return false;
  if (typeof value === 'string') return !pattern.test(value);
  if (typeof value !== 'object' || value === null) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (!isClean(value[i], depth + 1, pattern)) return false;
    return true;
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    const item = record[key];
    if (CONTROL_IN_LINE.test(key) || isPoisoning(key, item) || !isClean(item, depth + 1, pattern)) return false;
  }
  return true;
}

function headersClean(request: FastifyRequest): boolean {
  for (const name of CHECKED_HEADERS) if (!isClean(request.headers[name], 1, CONTROL_IN_LINE)) return false;
  return true;
}

/** Throws the 400 for the first control character (or reserved key, or too deep a nesting) found. */
function refuseFound(request: FastifyRequest): void {
  const headers: Record<string, unknown> = {};
  for (const name of CHECKED_HEADERS) headers[name] = request.headers[name];
  const found =
    findControl(request.params, 'path', 0, CONTROL_IN_LINE) ??
    findControl(request.query, 'query', 0, CONTROL_IN_LINE) ??
    findControl(headers, 'header', 0, CONTROL_IN_LINE) ??
    findControl(request.body, 'body', 0, CONTROL);
  if (!found) return;
  if (found.char === '')
    throw new AppError('VALIDATION', `${found.where} is nested more than ${MAX_DEPTH} levels deep`);
  if (found.char === 'PROTO')
    throw new AppError('VALIDATION', `${found.where} is a reserved field name`, { field: found.where });
  throw new AppError('VALIDATION', `${found.where} contains the control character ${codePoint(found.char)}`, {
    field: found.where,
  });
}

/**
 * preValidation, for every route: refuses control characters in path parameters, the query, the
 * headers we read and anywhere in a JSON body (keys included), before schemas, handlers, the
 * database or the signature check see them. A signed notification with one gets 400, not 500.
 * Callback style, not async: no promise and no extra turn per request (a throw here is caught by
 * Fastify's hook runner and answered by the error handler, as a rejection was).
 */
export function refuseControlCharacters(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  const clean =
    isClean(request.params, 0, CONTROL_IN_LINE) &&
    isClean(request.query, 0, CONTROL_IN_LINE) &&
    headersClean(request) &&
    isClean(request.body, 0, CONTROL);
  if (!clean) refuseFound(request);
  done();
}

/** Fastify's routing errors, answered as ours (`frameworkErrors`). */
export function frameworkErrors(maxParamLength: number) {
  return (error: FastifyError, _request: FastifyRequest, reply: FastifyReply): void => {
    const body: Problem =
      error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? problem('URI_TOO_LONG', `a path parameter is longer than ${maxParamLength} characters`, {
            limit: maxParamLength,
          })
        : problem(
            'VALIDATION',
            error.code === 'FST_ERR_BAD_URL'
              ? 'the path is not valid percent-encoded UTF-8'
              : 'the request cannot be routed',
          );
    void reply.code(body.status).type('application/problem+json').send(body);
  };
}

/**
 * Requests Node's parser refuses before Fastify sees them (a malformed request line, a header with
 * a control character, headers too large): still problem+json, then the connection is closed.
 */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const answer =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? problem('HEADERS_TOO_LARGE', `the request headers are larger than ${http.maxHeaderSize} bytes`, {
          limit: http.maxHeaderSize,
        })
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? problem('REQUEST_TIMEOUT', 'the request took too long to arrive')
        : problem(
            'VALIDATION',
            'the request is not valid HTTP/1.1 (a control character in a header, or a malformed request line)',
          );
  const body = JSON.stringify(answer);
  socket.end(
    `HTTP/1.1 ${answer.status} ${http.STATUS_CODES[answer.status]}\r\nContent-Type: application/problem+json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
