import { describe, expect, it } from 'vitest';
import { randomHex } from '../../src/platform/ids.ts';
import { newOrderId } from '../../src/orders/orders.keys.ts';

// Order, charge and fulfilment ids come from a pooled CSPRNG buffer (src/platform/ids.ts). What
// must hold across many refills of the pool: no id repeats (a byte handed out twice, or a pool
// reread without its refill, would repeat whole ids), the format is unchanged, and the bytes look
// uniform (a pool left zeroed or partly filled would skew the digits).

describe('pooled random ids', () => {
  it('ID-01 200,000 order ids over ~500 refills of the pool: all distinct, ord_ + 20 hex digits', () => {
    const ids = Array.from({ length: 200_000 }, () => newOrderId());
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids.slice(0, 1000)) expect(id).toMatch(/^ord_[0-9a-f]{20}$/);
  });

  it('ID-02 sizes that do not divide the pool straddle its end without reuse; every digit near 1/16', () => {
    const counts = new Map<string, number>();
    const seen = new Set<string>();
    let digits = 0;
    for (let i = 0; i < 30_000; i++) {
      const bytes = 1 + (i % 37);
      const hex = randomHex(bytes);
      if (hex.length !== bytes * 2) throw new Error(`randomHex(${bytes}) gave ${hex}`);
      if (bytes >= 8) {
        if (seen.has(hex)) throw new Error(`randomHex(${bytes}) repeated ${hex}`);
        seen.add(hex);
      }
      for (const d of hex) counts.set(d, (counts.get(d) ?? 0) + 1);
      digits += hex.length;
    }
    expect(counts.size).toBe(16);
    for (const n of counts.values()) expect(Math.abs(n / digits - 1 / 16)).toBeLessThan(0.005);
  });

  it('ID-03 a size outside 1..4096 bytes is refused', () => {
    for (const bad of [0, -1, 1.5, 4097]) expect(() => randomHex(bad)).toThrow(RangeError);
  });
});
