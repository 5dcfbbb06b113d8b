import { describe, expect, it } from 'vitest';
import { CASES, decideCase, describeDecision } from '../../src/orders/decide/table.ts';
import { decide, holdIsGone, type Hold } from '../../src/orders/decide/decider.ts';
import { isAllowed, ORDER_STATUSES, type OrderStatus } from '../../src/orders/decide/states.ts';

// Seed 000's effect table as the decider answers it: every status × a representative of every
// event. No database: `decide` is pure. Each row was read against the seed and the contract.
const EXPECTED: Record<string, string[]> = {
  pay: [
    'PAYING → PAYING call CHARGE', // CREATED
    'REJECTED', // PAYING
    'REJECTED', // UNKNOWN
    'REJECTED', // PAID
    'REJECTED', // FAILED
    'REJECTED', // CANCELLED
    'REJECTED', // REFUNDING
    'REJECTED', // REFUNDED
    'REJECTED', // COMPENSATING
    'REJECTED', // COMPENSATION_PENDING
    'REJECTED', // COMPENSATED
    'REJECTED', // PENDING
    'REJECTED', // REJECTED
    'REJECTED', // RELEASING
  ],
  'pay, hold expired': [
    'REJECTED → CANCELLED release', // CREATED
    'REJECTED', // PAYING
    'REJECTED', // UNKNOWN
    'REJECTED', // PAID
    'REJECTED', // FAILED
    'REJECTED', // CANCELLED
    'REJECTED', // REFUNDING
    'REJECTED', // REFUNDED
    'REJECTED', // COMPENSATING
    'REJECTED', // COMPENSATION_PENDING
    'REJECTED', // COMPENSATED
    'REJECTED', // PENDING
    'REJECTED', // REJECTED
    'REJECTED', // RELEASING
  ],
  'wallet pay': [
    'PAID → PAID confirm', // CREATED
    'REJECTED', // PAYING
    'REJECTED', // UNKNOWN
    'REJECTED', // PAID
    'REJECTED', // FAILED
    'REJECTED', // CANCELLED
    'REJECTED', // REFUNDING
    'REJECTED', // REFUNDED
    'REJECTED', // COMPENSATING
    'REJECTED', // COMPENSATION_PENDING
    'REJECTED', // COMPENSATED
    'REJECTED', // PENDING
    'REJECTED', // REJECTED
    'REJECTED', // RELEASING
  ],
  'wallet pay, hold expired': [
    'REJECTED → CANCELLED release', // CREATED
    'REJECTED', // PAYING
    'REJECTED', // UNKNOWN
    'REJECTED', // PAID
    'REJECTED', // FAILED
    'REJECTED', // CANCELLED
    'REJECTED', // REFUNDING
    'REJECTED', // REFUNDED
    'REJECTED', // COMPENSATING
    'REJECTED', // COMPENSATION_PENDING
    'REJECTED', // COMPENSATED
    'REJECTED', // PENDING
    'REJECTED', // REJECTED
    'REJECTED', // RELEASING
  ],
  cancel: [
    'CANCELLED → CANCELLED release', // CREATED
    'REJECTED', // PAYING
    'REJECTED', // UNKNOWN
    'REJECTED', // PAID
    'REJECTED', // FAILED
    'REJECTED', // CANCELLED
    'REJECTED', // REFUNDING
    'REJECTED', // REFUNDED
    'REJECTED', // COMPENSATING
    'REJECTED', // COMPENSATION_PENDING
    'REJECTED', // COMPENSATED
    'REJECTED', // PENDING
    'REJECTED', // REJECTED
    'REJECTED', // RELEASING
  ],
  'hold expired (recovery)': [
    'CANCELLED → CANCELLED', // CREATED
    'REJECTED', // PAYING
    'REJECTED', // UNKNOWN
    'REJECTED', // PAID
    'REJECTED', // FAILED
    'REJECTED', // CANCELLED
    'REJECTED', // REFUNDING
    'REJECTED', // REFUNDED
    'REJECTED', // COMPENSATING
    'REJECTED', // COMPENSATION_PENDING
    'REJECTED', // COMPENSATED
    'REJECTED', // PENDING
    'REJECTED', // REJECTED
    'REJECTED', // RELEASING
  ],
  'CHARGED, hold HELD': [
    'PAID → PAID confirm', // CREATED
    'PAID → PAID confirm', // PAYING
    'PAID → PAID confirm', // UNKNOWN
    'DUPLICATE', // PAID
    'REFUNDING_ANOMALY → REFUNDING call REFUND', // FAILED
    'REFUNDING_ANOMALY → REFUNDING call REFUND', // CANCELLED
    'DUPLICATE', // REFUNDING
    'DUPLICATE', // REFUNDED
    'DUPLICATE', // COMPENSATING
    'DUPLICATE', // COMPENSATION_PENDING
    'DUPLICATE', // COMPENSATED
    'IGNORED flag', // PENDING
    'IGNORED flag', // REJECTED
    'IGNORED flag', // RELEASING
  ],
  'CHARGED, hold released': [
    'PAID_REHELD → PAID rereserve; else REFUNDING → REFUNDING call REFUND', // CREATED
    'PAID_REHELD → PAID rereserve; else REFUNDING → REFUNDING call REFUND', // PAYING
    'PAID_REHELD → PAID rereserve; else REFUNDING → REFUNDING call REFUND', // UNKNOWN
    'DUPLICATE', // PAID
    'REFUNDING_ANOMALY → REFUNDING call REFUND', // FAILED
    'REFUNDING_ANOMALY → REFUNDING call REFUND', // CANCELLED
    'DUPLICATE', // REFUNDING
    'DUPLICATE', // REFUNDED
    'DUPLICATE', // COMPENSATING
    'DUPLICATE', // COMPENSATION_PENDING
    'DUPLICATE', // COMPENSATED
    'IGNORED flag', // PENDING
    'IGNORED flag', // REJECTED
    'IGNORED flag', // RELEASING
  ],
  'CHARGED, other amount': [
    'AMOUNT_MISMATCH flag', // CREATED
    'AMOUNT_MISMATCH flag', // PAYING
    'AMOUNT_MISMATCH flag', // UNKNOWN
    'AMOUNT_MISMATCH flag', // PAID
    'AMOUNT_MISMATCH flag', // FAILED
    'AMOUNT_MISMATCH flag', // CANCELLED
    'AMOUNT_MISMATCH flag', // REFUNDING
    'AMOUNT_MISMATCH flag', // REFUNDED
    'AMOUNT_MISMATCH flag', // COMPENSATING
    'AMOUNT_MISMATCH flag', // COMPENSATION_PENDING
    'AMOUNT_MISMATCH flag', // COMPENSATED
    'AMOUNT_MISMATCH flag', // PENDING
    'AMOUNT_MISMATCH flag', // REJECTED
    'AMOUNT_MISMATCH flag', // RELEASING
  ],
  DECLINED: [
    'IGNORED', // CREATED
    'FAILED → FAILED release', // PAYING
    'FAILED → FAILED release', // UNKNOWN
    'IGNORED flag', // PAID
    'DUPLICATE', // FAILED
    'IGNORED', // CANCELLED
    'IGNORED flag', // REFUNDING
    'IGNORED flag', // REFUNDED
    'IGNORED flag', // COMPENSATING
    'IGNORED flag', // COMPENSATION_PENDING
    'IGNORED flag', // COMPENSATED
    'IGNORED', // PENDING
    'IGNORED', // REJECTED
    'IGNORED', // RELEASING
  ],
  'CLOSED (our close)': [
    'IGNORED', // CREATED
    'FAILED → FAILED release', // PAYING
    'FAILED → FAILED release', // UNKNOWN
    'IGNORED flag', // PAID
    'DUPLICATE', // FAILED
    'IGNORED', // CANCELLED
    'IGNORED flag', // REFUNDING
    'IGNORED flag', // REFUNDED
    'IGNORED flag', // COMPENSATING
    'IGNORED flag', // COMPENSATION_PENDING
    'IGNORED flag', // COMPENSATED
    'IGNORED', // PENDING
    'IGNORED', // REJECTED
    'IGNORED', // RELEASING
  ],
  'REFUNDED (notification)': [
    'IGNORED', // CREATED
    'IGNORED', // PAYING
    'IGNORED', // UNKNOWN
    'REFUNDED → REFUNDED unconfirm', // PAID (issue 48: refunded at the provider already; no refund call)
    'IGNORED', // FAILED
    'IGNORED', // CANCELLED
    'REFUNDED → REFUNDED', // REFUNDING
    'IGNORED', // REFUNDED
    'IGNORED', // COMPENSATING
    'IGNORED', // COMPENSATION_PENDING
    'IGNORED', // COMPENSATED
    'IGNORED', // PENDING
    'IGNORED', // REJECTED
    'IGNORED', // RELEASING
  ],
  'REFUNDED (query)': [
    'IGNORED flag', // CREATED
    'IGNORED flag', // PAYING
    'IGNORED flag', // UNKNOWN
    'REFUNDED → REFUNDED', // PAID (issue 48; the case's hold is HELD, so nothing to put back)
    'IGNORED', // FAILED
    'IGNORED', // CANCELLED
    'REFUNDED → REFUNDED', // REFUNDING
    'IGNORED', // REFUNDED
    'IGNORED', // COMPENSATING
    'IGNORED', // COMPENSATION_PENDING
    'IGNORED', // COMPENSATED
    'IGNORED', // PENDING
    'IGNORED', // REJECTED
    'IGNORED', // RELEASING
  ],
  'refund refused': [
    'IGNORED', // CREATED
    'IGNORED', // PAYING
    'IGNORED', // UNKNOWN
    'IGNORED', // PAID
    'IGNORED', // FAILED
    'IGNORED', // CANCELLED
    'IGNORED flag', // REFUNDING
    'IGNORED', // REFUNDED
    'IGNORED', // COMPENSATING
    'IGNORED', // COMPENSATION_PENDING
    'IGNORED', // COMPENSATED
    'IGNORED', // PENDING
    'IGNORED', // REJECTED
    'IGNORED', // RELEASING
  ],
  'NOT_FOUND (query)': [
    'IGNORED', // CREATED
    'PENDING call CLOSE', // PAYING
    'PENDING call CLOSE', // UNKNOWN
    'IGNORED', // PAID
    'IGNORED', // FAILED
    'IGNORED', // CANCELLED
    'IGNORED', // REFUNDING
    'IGNORED', // REFUNDED
    'IGNORED', // COMPENSATING
    'IGNORED', // COMPENSATION_PENDING
    'IGNORED', // COMPENSATED
    'IGNORED', // PENDING
    'IGNORED', // REJECTED
    'IGNORED', // RELEASING
  ],
  'NOT_FOUND (close)': [
    'IGNORED', // CREATED
    'PENDING', // PAYING
    'PENDING', // UNKNOWN
    'IGNORED', // PAID
    'IGNORED', // FAILED
    'IGNORED', // CANCELLED
    'IGNORED', // REFUNDING
    'IGNORED', // REFUNDED
    'IGNORED', // COMPENSATING
    'IGNORED', // COMPENSATION_PENDING
    'IGNORED', // COMPENSATED
    'IGNORED', // PENDING
    'IGNORED', // REJECTED
    'IGNORED', // RELEASING
  ],
  'charge answer lost': [
    'IGNORED', // CREATED
    'UNKNOWN → UNKNOWN', // PAYING
    'PENDING', // UNKNOWN
    'IGNORED', // PAID
    'IGNORED', // FAILED
    'IGNORED', // CANCELLED
    'PENDING', // REFUNDING
    'IGNORED', // REFUNDED
    'IGNORED', // COMPENSATING
    'IGNORED', // COMPENSATION_PENDING
    'IGNORED', // COMPENSATED
    'IGNORED', // PENDING
    'IGNORED', // REJECTED
    'IGNORED', // RELEASING
  ],
  'query answer lost': [
    'IGNORED', // CREATED
    'PENDING', // PAYING
    'PENDING', // UNKNOWN
    'IGNORED', // PAID
    'IGNORED', // FAILED
    'IGNORED', // CANCELLED
    'PENDING', // REFUNDING
    'IGNORED', // REFUNDED
    'IGNORED', // COMPENSATING
    'IGNORED', // COMPENSATION_PENDING
    'IGNORED', // COMPENSATED
    'IGNORED', // PENDING
    'IGNORED', // REJECTED
    'IGNORED', // RELEASING
  ],
  'fulfilment refused': [
    'IGNORED', // CREATED
    'IGNORED', // PAYING
    'IGNORED', // UNKNOWN
    'COMPENSATING → COMPENSATING', // PAID
    'IGNORED', // FAILED
    'IGNORED', // CANCELLED
    'IGNORED', // REFUNDING
    'IGNORED', // REFUNDED
    'DUPLICATE', // COMPENSATING
    'DUPLICATE', // COMPENSATION_PENDING
    'DUPLICATE', // COMPENSATED
    'IGNORED', // PENDING
    'IGNORED', // REJECTED
    'IGNORED', // RELEASING
  ],
  'compensating refund failed': [
    'IGNORED', // CREATED
    'IGNORED', // PAYING
    'IGNORED', // UNKNOWN
    'IGNORED', // PAID
    'IGNORED', // FAILED
    'IGNORED', // CANCELLED
    'IGNORED', // REFUNDING
    'IGNORED', // REFUNDED
    'COMPENSATION_PENDING → COMPENSATION_PENDING', // COMPENSATING
    'COMPENSATION_PENDING', // COMPENSATION_PENDING
    'DUPLICATE', // COMPENSATED
    'IGNORED', // PENDING
    'IGNORED', // REJECTED
    'IGNORED', // RELEASING
  ],
  'stock reserved': [
    'IGNORED', // CREATED
    'IGNORED', // PAYING
    'IGNORED', // UNKNOWN
    'IGNORED', // PAID
    'IGNORED', // FAILED
    'IGNORED', // CANCELLED
    'IGNORED', // REFUNDING
    'IGNORED', // REFUNDED
    'IGNORED', // COMPENSATING
    'IGNORED', // COMPENSATION_PENDING
    'IGNORED', // COMPENSATED
    'CREATED → CREATED', // PENDING
    'IGNORED', // REJECTED
    'IGNORED', // RELEASING
  ],
  'compensating refund confirmed': [
    'IGNORED', // CREATED
    'IGNORED', // PAYING
    'IGNORED', // UNKNOWN
    'IGNORED', // PAID
    'IGNORED', // FAILED
    'IGNORED', // CANCELLED
    'IGNORED', // REFUNDING
    'IGNORED', // REFUNDED
    'COMPENSATING', // COMPENSATING
    'COMPENSATING → COMPENSATING', // COMPENSATION_PENDING
    'DUPLICATE', // COMPENSATED
    'IGNORED', // PENDING
    'IGNORED', // REJECTED
    'IGNORED', // RELEASING
  ],
  'stock rejected': [
    'IGNORED', // CREATED
    'IGNORED', // PAYING
    'IGNORED', // UNKNOWN
    'IGNORED', // PAID
    'IGNORED', // FAILED
    'IGNORED', // CANCELLED
    'IGNORED', // REFUNDING
    'IGNORED', // REFUNDED
    'IGNORED', // COMPENSATING
    'IGNORED', // COMPENSATION_PENDING
    'IGNORED', // COMPENSATED
    'REJECTED → REJECTED', // PENDING
    'IGNORED', // REJECTED
    'IGNORED', // RELEASING
  ],
  'compensation release': [
    'REJECTED', // CREATED
    'REJECTED', // PAYING
    'REJECTED', // UNKNOWN
    'REJECTED', // PAID
    'REJECTED', // FAILED
    'REJECTED', // CANCELLED
    'REJECTED', // REFUNDING
    'REJECTED', // REFUNDED
    'COMPENSATED → COMPENSATED unconfirm', // COMPENSATING
    'REJECTED', // COMPENSATION_PENDING
    'DUPLICATE', // COMPENSATED
    'REJECTED', // PENDING
    'REJECTED', // REJECTED
    'REJECTED', // RELEASING
  ],
  'stock released': [
    'IGNORED', // CREATED
    'IGNORED', // PAYING
    'IGNORED', // UNKNOWN
    'IGNORED', // PAID
    'IGNORED', // FAILED
    'IGNORED', // CANCELLED
    'IGNORED', // REFUNDING
    'IGNORED', // REFUNDED
    'IGNORED', // COMPENSATING
    'IGNORED', // COMPENSATION_PENDING
    'IGNORED', // COMPENSATED
    'IGNORED', // PENDING
    'IGNORED', // REJECTED
    'CANCELLED → CANCELLED', // RELEASING
  ],
  'wallet too low (queued order)': [
    'RELEASING → RELEASING request release', // CREATED
    'REJECTED', // PAYING
    'REJECTED', // UNKNOWN
    'REJECTED', // PAID
    'REJECTED', // FAILED
    'REJECTED', // CANCELLED
    'REJECTED', // REFUNDING
    'REJECTED', // REFUNDED
    'REJECTED', // COMPENSATING
    'REJECTED', // COMPENSATION_PENDING
    'REJECTED', // COMPENSATED
    'REJECTED', // PENDING
    'REJECTED', // REJECTED
    'REJECTED', // RELEASING
  ],
  // Issue 36: only a PAID order is refunded by an operator; one under way or done is a duplicate.
  'operator refund': [
    'REJECTED', // CREATED
    'REJECTED', // PAYING
    'REJECTED', // UNKNOWN
    'REFUNDING → REFUNDING unconfirm call REFUND', // PAID
    'REJECTED', // FAILED
    'REJECTED', // CANCELLED
    'DUPLICATE', // REFUNDING
    'DUPLICATE', // REFUNDED
    'REJECTED', // COMPENSATING
    'REJECTED', // COMPENSATION_PENDING
    'REJECTED', // COMPENSATED
    'REJECTED', // PENDING
    'REJECTED', // REJECTED
    'REJECTED', // RELEASING
  ],
  // Issue 48: shipped units stay out of stock (REFUNDED_SHIPPED) until an operator returns them.
  'operator refund, shipped': [
    'REJECTED', // CREATED
    'REJECTED', // PAYING
    'REJECTED', // UNKNOWN
    'REFUNDING → REFUNDING keep_shipped call REFUND', // PAID
    'REJECTED', // FAILED
    'REJECTED', // CANCELLED
    'DUPLICATE', // REFUNDING
    'DUPLICATE', // REFUNDED
    'REJECTED', // COMPENSATING
    'REJECTED', // COMPENSATION_PENDING
    'REJECTED', // COMPENSATED
    'REJECTED', // PENDING
    'REJECTED', // REJECTED
    'REJECTED', // RELEASING
  ],
  'operator return': [
    'REJECTED', // CREATED
    'REJECTED', // PAYING
    'REJECTED', // UNKNOWN
    'REJECTED', // PAID
    'REJECTED', // FAILED
    'REJECTED', // CANCELLED
    'RETURNED return', // REFUNDING
    'RETURNED return', // REFUNDED
    'REJECTED', // COMPENSATING
    'REJECTED', // COMPENSATION_PENDING
    'REJECTED', // COMPENSATED
    'REJECTED', // PENDING
    'REJECTED', // REJECTED
    'REJECTED', // RELEASING
  ],
};

describe('decide: what every event does to an order in every status', () => {
  it('covers every event case and every status', () => {
    expect(Object.keys(EXPECTED).sort()).toEqual(CASES.map((c) => c.name).sort());
    for (const row of Object.values(EXPECTED)) expect(row).toHaveLength(ORDER_STATUSES.length);
  });

  for (const c of CASES) {
    it(`${c.name}`, () => {
      const got = ORDER_STATUSES.map((s) => describeDecision(decideCase(s, c)));
      expect(got).toEqual(EXPECTED[c.name]);
    });
  }

  it('only ever proposes transitions that are in the state machine, and refused events change nothing', () => {
    for (const c of CASES) {
      for (const status of ORDER_STATUSES) {
        const d = decideCase(status, c);
        for (const x of [d, d.orElse])
          if (x?.to) expect(isAllowed(status, x.to), `${status} ${c.name} -> ${x.to}`).toBe(true);
        if (d.outcome === 'REJECTED' && !d.to) expect(d.stock).toEqual([]);
        if (!d.to) expect(d.emits).toEqual([]);
      }
    }
  });

  it('emits ORDER_<STATUS> exactly when it enters PAID, FAILED, CANCELLED or REFUNDED', () => {
    for (const c of CASES) {
      for (const status of ORDER_STATUSES) {
        const d = decideCase(status, c);
        const terminal: OrderStatus[] = ['PAID', 'FAILED', 'CANCELLED', 'REFUNDED'];
        expect(d.emits.filter((e) => e.startsWith('ORDER_'))).toEqual(
          d.to && terminal.includes(d.to) ? [`ORDER_${d.to}`] : [],
        );
      }
    }
  });

  it('never releases or confirms a unit it does not see HELD, and re-reserves under the next key', () => {
    const order = { orderId: 'ord_y', status: 'UNKNOWN' as const, amount: 5, reserveAttempt: 2 };
    const released: Hold = { key: 'ord_y/r2', sku: 's', quantity: 3, status: 'RELEASED', expiresAt: null };
    const d = decide(
      order,
      [released],
      { type: 'PROVIDER_ANSWERED', via: 'callback', status: 'CHARGED', amount: 5, cause: 'cb' },
      new Date(),
    );
    expect(d.stock).toEqual([{ op: 'rereserve', key: 'ord_y/r3', attempt: 3, sku: 's', quantity: 3, line: 1 }]);
    expect(d.orElse?.stock).toEqual([]);
    const failed = decide(
      order,
      [released],
      { type: 'PROVIDER_ANSWERED', via: 'query', status: 'DECLINED', cause: 'query' },
      new Date(),
    );
    expect(failed).toMatchObject({ outcome: 'FAILED', to: 'FAILED', stock: [] });
  });

  it('several lines: a HELD line is confirmed, each lost line is re-reserved under its own line key; a refusal releases the HELD ones', () => {
    const order = { orderId: 'ord_z', status: 'UNKNOWN' as const, amount: 9, reserveAttempt: 1 };
    const holds: Hold[] = [
      { key: 'ord_z/r1', sku: 'a', quantity: 1, status: 'RELEASED', expiresAt: null, line: 1 },
      { key: 'ord_z/l2/r1', sku: 'b', quantity: 2, status: 'HELD', expiresAt: null, line: 2 },
      { key: 'ord_z/l3/r1', sku: 'c', quantity: 1, status: 'RELEASED', expiresAt: null, line: 3 },
    ];
    const d = decide(
      order,
      holds,
      { type: 'PROVIDER_ANSWERED', via: 'query', status: 'CHARGED', amount: 9, cause: 'query' },
      new Date(),
    );
    expect(d.stock).toEqual([
      { op: 'rereserve', key: 'ord_z/r2', attempt: 2, sku: 'a', quantity: 1, line: 1 },
      { op: 'confirm', key: 'ord_z/l2/r1' },
      { op: 'rereserve', key: 'ord_z/l3/r2', attempt: 2, sku: 'c', quantity: 1, line: 3 },
    ]);
    expect(d.orElse).toMatchObject({
      to: 'REFUNDING',
      calls: ['REFUND'],
      stock: [{ op: 'release', key: 'ord_z/l2/r1' }],
    });
  });

  it('a hold is gone when it is not HELD or is past its expiry, whatever the sweep has done', () => {
    const now = new Date('2026-01-01T00:00:00Z');
    const hold = (status: Hold['status'], expiresAt: Date | null): Hold => ({
      key: 'k',
      sku: 's',
      quantity: 1,
      status,
      expiresAt,
    });
    expect(holdIsGone([hold('HELD', new Date(now.getTime() + 1))], now)).toBe(false);
    expect(holdIsGone([hold('HELD', now)], now)).toBe(true);
    expect(holdIsGone([hold('RELEASED', null)], now)).toBe(true);
    expect(holdIsGone([hold('CONFIRMED', null)], now)).toBe(true);
  });
});
