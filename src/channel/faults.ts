// Scripted faults. A rule hits exactly the number of requests it names: taking a rule is one
// synchronous step, so with `times: 1` and ten concurrent requests exactly one of them is hit.

export const FAULT_OPS = ['charge', 'refund', 'query', 'close', 'fulfil'] as const;
export type FaultOp = (typeof FAULT_OPS)[number];
export const FAULT_KINDS = [
  'DELAY_RESPONSE',
  'DELAY_REQUEST',
  'DECLINE',
  'ERROR_500',
  'RESET_CONNECTION',
  'REFUSE',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultRule {
  id: number;
  op: FaultOp;
  kind: FaultKind;
  merchantOrder: string | undefined;
  ms: number;
  remaining: number;
}

export type FaultHits = Partial<Record<FaultKind, FaultRule>>;

export class FaultBook {
  private rules: FaultRule[] = [];
  private nextId = 1;

  arm(rule: Omit<FaultRule, 'id'>): FaultRule {
    const armed = { ...rule, id: this.nextId++ };
    this.rules.push(armed);
    return armed;
  }

  /** Consumes, for one request, at most one rule of each kind, the earliest armed first. */
  take(op: FaultOp, merchantOrder: string): FaultHits {
    const hits: FaultHits = {};
    for (const rule of this.rules) {
      if (rule.op !== op || hits[rule.kind]) continue;
      if (rule.merchantOrder !== undefined && rule.merchantOrder !== merchantOrder) continue;
      rule.remaining -= 1;
      hits[rule.kind] = { ...rule };
    }
    this.rules = this.rules.filter((rule) => rule.remaining > 0);
    return hits;
  }

  list(): FaultRule[] {
    return this.rules.map((rule) => ({ ...rule }));
  }

  clear(): void {
    this.rules = [];
  }
}

export function describeRule(rule: FaultRule): Record<string, unknown> {
  return {
    id: rule.id,
    op: rule.op,
    kind: rule.kind,
    merchant_order: rule.merchantOrder ?? null,
    ms: rule.ms,
    remaining: rule.remaining,
  };
}

/** Requests received per operation and merchant order, counted on arrival (faulted ones too). */
export class RequestCounter {
  private counts = new Map<FaultOp, Map<string, number>>();

  record(op: FaultOp, merchantOrder: string): void {
    const byOrder = this.counts.get(op) ?? new Map<string, number>();
    byOrder.set(merchantOrder, (byOrder.get(merchantOrder) ?? 0) + 1);
    this.counts.set(op, byOrder);
  }

  snapshot(): Record<FaultOp, { total: number; by_order: Record<string, number> }> {
    const entries = FAULT_OPS.map((op) => {
      const byOrder = Object.fromEntries(this.counts.get(op) ?? []);
      const total = Object.values(byOrder).reduce((sum, n) => sum + n, 0);
      return [op, { total, by_order: byOrder }] as const;
    });
    return Object.fromEntries(entries) as Record<FaultOp, { total: number; by_order: Record<string, number> }>;
  }

  clear(): void {
    this.counts.clear();
  }
}
