import { KeyedMutex } from './keyed-mutex.ts';
import {
  RefundKeyConflict,
  type AccountMove,
  type ChargeRecord,
  type LedgerStore,
  type LineDraft,
  type StatementLine,
} from './ledger.ts';

/**
 * The ledger in process memory (and the customer accounts beside it): the default for a
 * standalone `flashpay channel`. A decision's
 * write is applied in one synchronous step after the decision is made, so a failing decision
 * leaves nothing half-written.
 */
export function createMemoryLedger(): LedgerStore {
  const mutex = new KeyedMutex();
  const records = new Map<string, ChargeRecord>();
  const refundKeys = new Map<string, string>();
  const lines: StatementLine[] = [];
  const balances = new Map<string, number>();
  // The customer each charged merchant order was taken from, so its refund gives back to them.
  const chargedFrom = new Map<string, { customer: string; amount: number }>();

  function move(merchantOrder: string, account: AccountMove | undefined): void {
    if (!account) return;
    if (account.kind === 'DEBIT') {
      const balance = balances.get(account.customer);
      if (balance === undefined) return;
      balances.set(account.customer, balance - account.amount);
      chargedFrom.set(merchantOrder, { customer: account.customer, amount: account.amount });
      return;
    }
    const from = chargedFrom.get(merchantOrder);
    if (!from) return;
    chargedFrom.delete(merchantOrder);
    balances.set(from.customer, (balances.get(from.customer) ?? 0) + from.amount);
  }

  function apply(record: ChargeRecord, line: LineDraft | undefined, account?: AccountMove): void {
    if (record.refundKey !== null) {
      const owner = refundKeys.get(record.refundKey);
      if (owner !== undefined && owner !== record.merchantOrder) throw new RefundKeyConflict(record.refundKey);
      refundKeys.set(record.refundKey, record.merchantOrder);
    }
    records.set(record.merchantOrder, { ...record });
    move(record.merchantOrder, account);
    if (line) lines.push({ ...line, at: new Date().toISOString(), seq: lines.length + 1 });
  }

  return {
    withOrder(merchantOrder, decide) {
      return mutex.run(merchantOrder, async () => {
        const stored = records.get(merchantOrder);
        const decision = await decide({
          current: stored ? { ...stored } : undefined,
          refundKeyOwner: async (refundKey) => refundKeys.get(refundKey),
          balanceOf: async (customer) => balances.get(customer),
        });
        if (decision.write) apply(decision.write.record, decision.write.line, decision.write.account);
        return decision.outcome;
      });
    },
    async statement(merchantOrder, page) {
      // seq n is lines[n - 1]: a page starts right after its cursor.
      const from = page ? lines.slice(page.after) : lines;
      const chosen = merchantOrder === undefined ? from : from.filter((line) => line.merchantOrder === merchantOrder);
      return (page ? chosen.slice(0, page.limit) : chosen).map((line) => ({ ...line }));
    },
    async reset() {
      records.clear();
      refundKeys.clear();
      lines.length = 0;
    },
    accounts: {
      async set(customer, balance) {
        balances.set(customer, balance);
      },
      async get(customer) {
        return balances.get(customer);
      },
      async clear() {
        balances.clear();
        chargedFrom.clear();
      },
    },
  };
}
