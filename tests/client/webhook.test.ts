import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  assertSignature,
  constructEvent,
  MIN_SECRET_BYTES,
  signPayload,
  verifySignature,
  WebhookSignatureError,
} from 'flashpay/client';

// Issue 48: constructEvent refuses a configuration that protects nothing, accepts any of several
// `v1` (a secret being rotated), and calls a parsed body what it is.

const SECRET = 'wh-events-secret-at-least-32-bytes-long';
const OTHER = 'wh-another-secret-at-least-32-bytes-long';
const NOW = 1_800_000_000;
const event = { event_id: '7', order_id: 'ord_wh', event_type: 'ORDER_PAID', order_version: 2, payload: {} };
const body = JSON.stringify(event);
const v1Of = (secret: string, raw: string, t = NOW) => createHmac('sha256', secret).update(`${t}.${raw}`).digest('hex');

/** What a call throws: the class and, for a WebhookSignatureError, its reason. */
function thrown(fn: () => unknown): string {
  try {
    fn();
    return 'accepted';
  } catch (error) {
    if (error instanceof WebhookSignatureError) return `WebhookSignatureError:${error.reason}`;
    return (error as Error).constructor.name;
  }
}

describe('issue 48: constructEvent hardening', () => {
  it('WH-01: an empty, missing or short secret throws (a TypeError / RangeError, never a quiet false)', () => {
    // Proves a receiver misconfigured with no secret cannot accept a MAC anyone can compute.
    const empty = signPayload('', body, NOW);
    const short = 'x'.repeat(MIN_SECRET_BYTES - 1);
    const outcomes = {
      empty: thrown(() => constructEvent(body, empty, '', { nowSeconds: NOW })),
      missing: thrown(() => constructEvent(body, empty, undefined as unknown as string, { nowSeconds: NOW })),
      nullSecret: thrown(() => constructEvent(body, empty, null as unknown as string, { nowSeconds: NOW })),
      short: thrown(() => constructEvent(body, signPayload(short, body, NOW), short, { nowSeconds: NOW })),
      // 11 characters of 3 bytes each: 33 bytes, long enough; the length counts bytes, not characters.
      multibyte: thrown(() =>
        constructEvent(body, signPayload('✓'.repeat(11), body, NOW), '✓'.repeat(11), { nowSeconds: NOW }),
      ),
      verifyEmpty: thrown(() => verifySignature('', empty, body, { nowSeconds: NOW })),
    };
    expect(outcomes).toEqual({
      empty: 'TypeError',
      missing: 'TypeError',
      nullSecret: 'TypeError',
      short: 'RangeError',
      multibyte: 'accepted',
      verifyEmpty: 'TypeError',
    });
  });

  it('WH-02: a tolerance that is not a finite number >= 0 throws', () => {
    // Proves Infinity or NaN cannot turn the replay window off (NaN compared false: every age passed).
    const header = signPayload(SECRET, body, NOW);
    const old = { nowSeconds: NOW + 10_000_000 };
    const outcomes = Object.fromEntries(
      [-1, Number.NaN, Number.POSITIVE_INFINITY, '300' as unknown as number].map((tolerance) => [
        String(tolerance),
        thrown(() => constructEvent(body, header, SECRET, { ...old, toleranceSeconds: tolerance })),
      ]),
    );
    expect(outcomes).toEqual({ '-1': 'RangeError', NaN: 'RangeError', Infinity: 'RangeError', '300': 'RangeError' });
    expect(constructEvent(body, header, SECRET, { nowSeconds: NOW, toleranceSeconds: 0 })).toEqual(event);
  });

  it('WH-03: a header with several v1 passes when any of them matches, wherever it stands; none matching is a mismatch', () => {
    // Proves a rotation (old and new secret both signing) is accepted whichever order the signatures come in.
    const good = v1Of(SECRET, body);
    const bad = v1Of(OTHER, body);
    const at = { nowSeconds: NOW };
    expect(constructEvent(body, `t=${NOW},v1=${good},v1=${bad}`, SECRET, at)).toEqual(event);
    expect(constructEvent(body, `t=${NOW},v1=${bad},v1=${good}`, SECRET, at)).toEqual(event);
    expect(constructEvent(body, `t=${NOW}, v0=abc, v1=${bad}, v1=${good}`, SECRET, at)).toEqual(event);
    expect(constructEvent(body, `v1=${bad},v1=${good},t=${NOW}`, OTHER, at)).toEqual(event);
    expect(thrown(() => constructEvent(body, `t=${NOW},v1=${bad},v1=${bad}`, SECRET, at))).toBe(
      'WebhookSignatureError:SIGNATURE_MISMATCH',
    );
    expect(thrown(() => constructEvent(body, `t=${NOW},v1=zz,v1=`, SECRET, at))).toBe(
      'WebhookSignatureError:SIGNATURE_MALFORMED',
    );
    expect(thrown(() => constructEvent(body, `t=${NOW},${`v1=${bad},`.repeat(9)}v1=${good}`, SECRET, at))).toBe(
      'WebhookSignatureError:SIGNATURE_MALFORMED',
    );
    expect(verifySignature(SECRET, `t=${NOW},v1=${bad},v1=${good}`, body, at)).toBe(true);
  });

  it('WH-04: a body that is not the raw string or bytes (a parsed object, a number, null) is a WebhookSignatureError', () => {
    // Proves the common mistake (passing the JSON-parsed body) is a typed refusal, not a TypeError from deep inside.
    const header = signPayload(SECRET, body, NOW);
    const at = { nowSeconds: NOW };
    for (const notRaw of [event, 42, null, undefined, [body]])
      expect(thrown(() => constructEvent(notRaw as unknown as string, header, SECRET, at))).toBe(
        'WebhookSignatureError:BODY_NOT_RAW',
      );
    expect(thrown(() => assertSignature(event as unknown as string, header, SECRET, at))).toBe(
      'WebhookSignatureError:BODY_NOT_RAW',
    );
    expect(verifySignature(SECRET, header, event as unknown as string, at)).toBe(false);
    expect(constructEvent(new TextEncoder().encode(body), header, SECRET, at)).toEqual(event);
  });
});
