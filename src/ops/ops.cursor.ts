import { AppError } from '../platform/errors.ts';
import type { SearchCursor } from '../orders/index.ts';

// The search's cursor: the last order's (created_at, order_id), base64url. Opaque to clients; a
// string this server did not give is 400 VALIDATION, never a query.
const CREATED_AT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
const ORDER_ID = /^[\x21-\x7e]{1,64}$/;

export function encodeCursor(c: SearchCursor): string {
  return Buffer.from(`${c.createdAt}|${c.orderId}`, 'utf8').toString('base64url');
}

/**
 * The pattern alone lets `2026-02-31T25:61:00.000000Z` through, which PostgreSQL refuses with an
 * error (a 500): the date must also be one the calendar has, in the years PostgreSQL and JS share.
 */
function isRealInstant(createdAt: string): boolean {
  const millis = Date.parse(createdAt.slice(0, 23) + 'Z');
  if (!Number.isFinite(millis) || createdAt < '0001') return false;
  return new Date(millis).toISOString().slice(0, 23) === createdAt.slice(0, 23);
}

export function decodeCursor(raw: string): SearchCursor {
  const text = Buffer.from(raw, 'base64url').toString('utf8');
  const bar = text.indexOf('|');
  const createdAt = text.slice(0, bar);
  const orderId = text.slice(bar + 1);
  if (bar < 0 || !CREATED_AT.test(createdAt) || !isRealInstant(createdAt) || !ORDER_ID.test(orderId))
    throw new AppError('VALIDATION', 'querystring.cursor is not a cursor this server gave', {
      field: 'querystring.cursor',
    });
  return { createdAt, orderId };
}

// The SKU list's cursor (issue 52): the last SKU's (tenant, sku) as base64url JSON.
const TENANT_ID = /^[\x20-\x7e]{1,128}$/;
const SKU_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;

export function encodeSkuCursor(c: { tenantId: string; sku: string }): string {
  return Buffer.from(JSON.stringify([c.tenantId, c.sku]), 'utf8').toString('base64url');
}

export function decodeSkuCursor(raw: string): { tenantId: string; sku: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const [tenantId, sku] = Array.isArray(parsed) && parsed.length === 2 ? (parsed as unknown[]) : [];
  if (typeof tenantId !== 'string' || typeof sku !== 'string' || !TENANT_ID.test(tenantId) || !SKU_ID.test(sku))
    throw new AppError('VALIDATION', 'querystring.cursor is not a cursor this server gave', {
      field: 'querystring.cursor',
    });
  return { tenantId, sku };
}
