import { createHash } from 'node:crypto';

/** JSON with object keys sorted, so key order and whitespace never change a digest. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** Digest of the validated request (body with defaults applied, plus path parameters). Version-tagged. */
export function requestDigest(operation: string, params: Record<string, unknown>, body: unknown): string {
  return createHash('sha256')
    .update(`v1\n${operation}\n${canonicalJson(params)}\n${canonicalJson(body)}`)
    .digest('hex');
}

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export function isValidKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}
