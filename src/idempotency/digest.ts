import { createHash, hash } from 'node:crypto';

/**
 * JSON with object keys sorted, so key order and whitespace never change a digest. Built by
 * concatenation (no entries/filter/map arrays per object): it runs on every keyed request, and its
 * output must stay byte-identical to what stored digests were computed over (tests/idempotency/digest).
 * `Object.keys().sort()` orders by UTF-16 code units, as the `<` comparison it replaced did.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ',';
      // A hole stays empty, as Array#map + join rendered it.
      if (i in value) out += canonicalJson(value[i]);
    }
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).sort();
  let out = '{';
  for (const key of keys) {
    const item = record[key];
    if (item === undefined) continue;
    if (out.length > 1) out += ',';
    out += `${JSON.stringify(key)}:${canonicalJson(item)}`;
  }
  return `${out}}`;
}

// One-shot hashing (Node ≥ 20.12) skips the Hash object; the same SHA-256, the same hex.
const sha256Hex: (text: string) => string =
  typeof hash === 'function'
    ? (text) => hash('sha256', text, 'hex')
    : (text) => createHash('sha256').update(text).digest('hex');

/** Digest of the validated request (body with defaults applied, plus path parameters). Version-tagged. */
export function requestDigest(operation: string, params: Record<string, unknown>, body: unknown): string {
  return sha256Hex(`v1\n${operation}\n${canonicalJson(params)}\n${canonicalJson(body)}`);
}

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export function isValidKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}
