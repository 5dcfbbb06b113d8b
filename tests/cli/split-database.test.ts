import { describe, it } from 'vitest';
import { runSplitSale } from './split-sale.ts';

describe('three processes, split databases, over the database transport', () => {
  it("SP-01 two shops on one database + flashpay inventory on its own: 500 buyers / 100 units, stock service killed -9 mid-batch, one shop killed -9: 80 PAID, 20 RELEASING → CANCELLED, 400 REJECTED; each request applied once; both databases agree; reconciliation clean; an operator's `flashpay reconcile --stock-database-url` agrees and names a planted lost hold", async () => {
    await runSplitSale({}, { operatorCli: true });
  }, 150_000);
});
