import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson, requestDigest } from '../../src/idempotency/digest.ts';

// The implementation before issue 16 H: stored digests were computed with it, so the faster one
// must give the same bytes for every input.
function referenceCanonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(referenceCanonical).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${referenceCanonical(v)}`).join(',')}}`;
}
const referenceDigest = (operation: string, params: Record<string, unknown>, body: unknown) =>
  createHash('sha256')
    .update(`v1\n${operation}\n${referenceCanonical(params)}\n${referenceCanonical(body)}`)
    .digest('hex');

const samples: unknown[] = [
  {},
  [],
  { sku: 'a', quantity: 1 },
  { quantity: 1, sku: 'a' },
  {
    lines: [
      { sku: 'b', quantity: 2 },
      { sku: 'a', quantity: 1 },
    ],
  },
  { z: undefined, a: null, 'e\u0301': 'ü', é: 1, B: [1, 'x', null, true, { y: 2, x: [] }], '\u0000k': '\n"' },
  // UTF-16 code unit order: an astral character sorts before U+FFFF.
  { '\uffff': 1, '\u{1f600}': 2, a10: 3, a9: 4, '': 5 },
  [undefined, 1.5, -0, 1e21, 'π'],
  new Date(0),
  'plain',
  42,
  null,
  [1, , 3],
];

describe('requestDigest (issue 16 H: cheaper, same value)', () => {
  it('canonical JSON is byte-identical to the reference for every sample', () => {
    for (const sample of samples) expect(canonicalJson(sample)).toBe(referenceCanonical(sample));
  });

  it('the digest of a create, a pay and a credit equals the stored-digest reference', () => {
    expect(requestDigest('create_order', {}, { sku: 's', quantity: 1 })).toBe(
      referenceDigest('create_order', {}, { sku: 's', quantity: 1 }),
    );
    expect(requestDigest('pay_order', { id: 'o1' }, { method: 'wallet' })).toBe(
      referenceDigest('pay_order', { id: 'o1' }, { method: 'wallet' }),
    );
    for (const sample of samples)
      expect(requestDigest('x', { respond: 'async' }, sample)).toBe(referenceDigest('x', { respond: 'async' }, sample));
    // A value fixed before the change: a digest stored by an older release still matches.
    expect(requestDigest('create_order', {}, { sku: 'p2/sku', quantity: 1 })).toBe(
      createHash('sha256').update('v1\ncreate_order\n{}\n{"quantity":1,"sku":"p2/sku"}').digest('hex'),
    );
  });
});
