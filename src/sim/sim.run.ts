import type { ReconciliationReport } from '../reconcile/index.ts';
import { controlHttp, createSimSku, http, recoverNow, type SimTarget } from './sim.client.ts';
import { globalLine, ownLine, ownPart, type SimScope } from './sim.judge.ts';
import type { PlannedOrder, SimPlan, SimShape } from './sim.plan.ts';
import { pool, simReport, sleep, type Held, type Progress, type SimReport } from './sim.support.ts';

// The seed's competition window and convergence budget; both end early once the sale settles.
// Generous: three sales beside a crash matrix on 2 cores once took 64 s to sell their last unit,
// and a late buyer that gives up at the deadline leaves it unsold (PAID 23 of 24).
const COMPETE_DEADLINE_MS = 150_000;
// Failed queries before an `expire` order's success can be learnt by asking (recovery backs off after 3).
const LATE_SUCCESS_QUERIES = 5;
const CONVERGE_DEADLINE_MS = 90_000;
// How long a queued order may stay PENDING before the sim gives up waiting (the stock pump runs every 100 ms).
const QUEUED_DEADLINE_MS = 60_000;

/** The seeded flash sale of seed 000 (C29-13), run against a live stack over HTTP. */
export class Simulation {
  private readonly ids = new Map<number, string>();
  /** Every order this run placed (originals and late buyers): what it judges with scope `own`. */
  private readonly mine = new Set<string>();
  private lateWon = 0;
  private walletPaid = 0;
  private walletRefused = 0;
  private settledLate = 0;

  constructor(
    private readonly target: SimTarget,
    private readonly plan: SimPlan,
    private readonly shape: SimShape,
    private readonly sku: string,
    private readonly onProgress: (p: Progress) => void = () => undefined,
    private readonly scope: SimScope = 'all',
  ) {}

  private judged(report: ReconciliationReport): ReconciliationReport {
    return this.scope === 'own' ? ownPart(report, this.mine) : report;
  }

  private admin(method: string, path: string, body?: unknown, key?: string) {
    return http(`${this.target.api}${path}`, { method, token: this.target.adminToken, body, ...(key ? { key } : {}) });
  }

  private readonly createSku = (sku: string, name: string, stock: number) =>
    createSimSku(this.target, sku, name, stock);

  private readonly control = (method: string, path: string, body?: unknown) =>
    controlHttp(this.target, path, { method, body });

  private async fault(orderId: string, op: string, kind: string, ms?: number) {
    await this.control('POST', '/_control/faults', { op, kind, merchant_order: orderId, ...(ms ? { ms } : {}) });
  }

  /** One original buyer: order, the planned fault, and (unless they never pay) pay. */
  private async original(order: PlannedOrder): Promise<void> {
    const buyer = `${this.sku}-buyer-${order.index}`;
    const token = await this.target.buyerToken(buyer);
    const created = await this.place(token, `${this.sku}-o${order.index}`);
    if (created.status !== 201) return;
    const orderId = created.body.order_id as string;
    this.ids.set(order.index, orderId);
    if (order.fault === 'decline') await this.fault(orderId, 'charge', 'DECLINE');
    if (order.fault === 'lost' || order.fault === 'expire')
      await this.fault(orderId, 'charge', 'DELAY_RESPONSE', order.delayMs);
    // The success of an `expire` order reaches us late: the first queries fail, so late buyers can
    // take its unit back first, and the success then re-reserves or refunds.
    if (order.fault === 'expire')
      await this.control('POST', '/_control/faults', {
        op: 'query',
        kind: 'ERROR_500',
        merchant_order: orderId,
        times: LATE_SUCCESS_QUERIES,
      });
    if (order.fault === 'linger') await this.fault(orderId, 'charge', 'DELAY_REQUEST', order.delayMs);
    if (order.refundTimeout) await this.fault(orderId, 'refund', 'DELAY_RESPONSE', 800);
    if (order.fault === 'refuse' || order.fault === 'refundfail') await this.fault(orderId, 'fulfil', 'REFUSE');
    if (order.fault === 'refundfail')
      await this.control('POST', '/_control/faults', {
        op: 'refund',
        kind: 'ERROR_500',
        merchant_order: orderId,
        times: 2,
      });
    if (order.wallet) await this.payFromWallet(buyer, token, orderId, created.body.amount as number, order);
    else if (order.fault !== 'nopay')
      await http(`${this.target.api}/v1/orders/${orderId}/pay`, {
        method: 'POST',
        token,
        key: `${this.sku}-p${order.index}`,
      });
    // Its hold ends now, as if 60 s had passed: for `expire`, while the payment is UNKNOWN, so the
    // unit goes back on sale before the success arrives; for `nopay`, an abandoned order.
    if (order.fault === 'expire' || order.fault === 'nopay') await this.expireHold(orderId);
  }

  /**
   * Places an order. Queued (`--async`): 202 PENDING, then the order is polled until the stock
   * service answered, and read as the synchronous path would answer: CREATED as 201, REJECTED as 409.
   */
  private async place(token: string, key: string) {
    const created = await http(`${this.target.api}/v1/orders`, {
      method: 'POST',
      token,
      key,
      body: this.orderBody(),
      ...(this.shape.queued ? { prefer: 'respond-async' } : {}),
    });
    if (typeof created.body?.order_id === 'string') this.mine.add(created.body.order_id);
    if (created.status !== 202) return created;
    const orderId = created.body.order_id as string;
    for (const deadline = Date.now() + QUEUED_DEADLINE_MS; Date.now() < deadline; await sleep(50)) {
      const view = await http(`${this.target.api}/v1/orders/${orderId}`, { token });
      if (view.status === 200 && view.body.status === 'CREATED') return { status: 201, body: view.body };
      if (view.status === 200 && view.body.status === 'REJECTED')
        return { status: 409, body: { code: 'SOLD_OUT', order_id: orderId } };
    }
    return { status: 504, body: { order_id: orderId } };
  }

  /** `{sku}`, or the sale's SKU with its companions when the sale runs with --lines N. */
  private orderBody(): unknown {
    const n = this.shape.lines ?? 1;
    if (n <= 1) return { sku: this.sku };
    return {
      lines: [{ sku: this.sku }, ...Array.from({ length: n - 1 }, (_, i) => ({ sku: `${this.sku}-l${i + 2}` }))],
    };
  }

  /** A wallet buyer: seeded balance, pay from it; too low a balance (409) pays by the provider instead. */
  private async payFromWallet(
    buyer: string,
    token: string,
    orderId: string,
    amount: number,
    order: PlannedOrder,
  ): Promise<void> {
    const balance = order.wallet === 'SHORT' ? amount - 1 : amount;
    if (balance > 0)
      await this.admin(
        'POST',
        `/v1/admin/wallets/${encodeURIComponent(buyer)}/credits`,
        { amount: balance, reason: 'sim: a buyer tops up before the sale' },
        `${this.sku}-fund${order.index}`,
      );
    const paid = await http(`${this.target.api}/v1/orders/${orderId}/pay`, {
      method: 'POST',
      token,
      key: `${this.sku}-w${order.index}`,
      body: { method: 'wallet' },
    });
    // A queued order gives its units back instead (202 RELEASING → CANCELLED once the stock service answers).
    if (paid.status === 202 && paid.body?.status === 'RELEASING') this.walletRefused++;
    else if (paid.status === 409 && paid.body?.code === 'INSUFFICIENT_FUNDS') {
      this.walletRefused++;
      await http(`${this.target.api}/v1/orders/${orderId}/pay`, {
        method: 'POST',
        token,
        key: `${this.sku}-p${order.index}`,
      });
    } else if (paid.status === 200) this.walletPaid++;
  }

  private async expireHold(orderId: string): Promise<void> {
    await this.admin('POST', '/v1/admin/reservations/expire', { order_id: orderId });
    await this.admin('POST', '/v1/admin/expiry/run');
  }

  private async saleOver(): Promise<boolean> {
    const sku = await this.admin('GET', `/v1/admin/skus/${this.sku}`);
    return sku.status === 200 && sku.body.available === 0 && sku.body.held === 0;
  }

  /**
   * A buyer who was sold out earlier tries again with fresh keys until they have paid or nothing is
   * left. A pay not answered PAID (a loaded machine can time out a healthy charge: UNKNOWN, then
   * FAILED if it never reached the provider) goes on competing, or its returned unit stays unsold.
   */
  private async lateBuyer(n: number, deadline: number): Promise<void> {
    const token = await this.target.buyerToken(`${this.sku}-late-${n}`);
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      const created = await this.place(token, `${this.sku}-late${n}-a${attempt}`);
      if (created.status === 201) {
        const paid = await http(`${this.target.api}/v1/orders/${created.body.order_id}/pay`, {
          method: 'POST',
          token,
          key: `${this.sku}-late${n}-pay-a${attempt}`,
        });
        if (paid.status === 200 && paid.body?.status === 'PAID') {
          this.lateWon++;
          break;
        }
      }
      if (await this.saleOver()) break;
      await sleep(100 + 20 * (n % 5));
    }
    this.settledLate++;
  }

  private async held(): Promise<Held[]> {
    const reply = await this.control('GET', '/_control/callbacks/held');
    const mine = new Set(this.ids.values());
    return ((reply.body ?? []) as Held[]).filter((h) => mine.has(h.merchant_order));
  }

  /** Releases an order's held notifications, `copies` of each, in the plan's order and pacing. */
  private async releaseCallbacks(): Promise<void> {
    for (const [i, index] of this.plan.releaseOrder.entries()) {
      await sleep(this.plan.releaseDelaysMs[i] ?? 0);
      const orderId = this.ids.get(index);
      const copies = this.plan.orders[index]?.copies ?? 1;
      if (!orderId) continue;
      const byNotify = new Map<string, string[]>();
      for (const h of (await this.held()).filter((x) => x.merchant_order === orderId))
        byNotify.set(h.notify_id, [...(byNotify.get(h.notify_id) ?? []), h.id]);
      const ids = [...byNotify.values()].flatMap((list) => list.slice(0, copies));
      if (ids.length > 0) await this.control('POST', '/_control/callbacks/release', { ids });
    }
  }

  private async recoveryLoop(until: () => boolean): Promise<void> {
    while (!until()) {
      await recoverNow(this.target, 1000);
      await sleep(300);
    }
  }

  /** Recovery, the remaining notifications (one copy each), the outbox, until nothing is pending. */
  private async converge(): Promise<ReconciliationReport> {
    const deadline = Date.now() + CONVERGE_DEADLINE_MS;
    for (;;) {
      const byNotify = new Map<string, string>();
      for (const h of await this.held()) if (!byNotify.has(h.notify_id)) byNotify.set(h.notify_id, h.id);
      if (byNotify.size > 0) await this.control('POST', '/_control/callbacks/release', { ids: [...byNotify.values()] });
      await recoverNow(this.target, 0);
      if (this.shape.queued) await this.admin('POST', '/v1/admin/stock/drain');
      await this.admin('POST', '/v1/admin/outbox/drain');
      const report = (await this.admin('GET', '/v1/admin/reconciliation')).body as ReconciliationReport;
      if ((this.judged(report).pending === 0 && report.events.pending === 0) || Date.now() > deadline) return report;
      await sleep(300);
    }
  }

  async run(): Promise<SimReport> {
    const created = await this.createSku(this.sku, `Simulated flash sale (seed ${this.plan.seed})`, this.shape.stock);
    // 409: our own earlier attempt created it before the stack went down under us.
    if (created.status !== 201 && created.status !== 409)
      throw new Error(`cannot create SKU ${this.sku}: ${created.status} ${JSON.stringify(created.body)}`);
    // Companion lines have stock to spare: only the sale's SKU is contested.
    for (let line = 2; line <= (this.shape.lines ?? 1); line++)
      await this.createSku(`${this.sku}-l${line}`, `Companion ${line}`, this.shape.stock + this.shape.lateBuyers);
    await this.control('POST', '/_control/callbacks', { mode: 'HOLD', duplicates: 3 });
    let bought = 0;
    this.onProgress({ phase: 'buying', done: 0, total: this.plan.orders.length });
    await pool(this.plan.orders, this.shape.concurrency, async (order) => {
      await this.original(order);
      this.onProgress({ phase: 'buying', done: ++bought, total: this.plan.orders.length });
    });

    const deadline = Date.now() + COMPETE_DEADLINE_MS;
    let competing = true;
    const progress = setInterval(
      () => this.onProgress({ phase: 'competing', done: this.settledLate, total: this.shape.lateBuyers }),
      200,
    );
    try {
      await Promise.all([
        Promise.all(Array.from({ length: this.shape.lateBuyers }, (_, n) => this.lateBuyer(n, deadline))),
        this.releaseCallbacks(),
        this.recoveryLoop(() => !competing),
        (async () => {
          while (this.settledLate < this.shape.lateBuyers && Date.now() < deadline) await sleep(50);
          competing = false;
        })(),
      ]);
    } finally {
      clearInterval(progress);
    }

    this.onProgress({ phase: 'converging', done: 0, total: 1 });
    const reconciliation = await this.converge();
    await this.control('POST', '/_control/callbacks', { mode: 'AUTO', duplicates: 1 });
    const outcomes = (await this.admin('GET', `/v1/admin/skus/${this.sku}/outcomes`)).body as {
      statuses: Record<string, number>;
      notification_effects: Record<string, number>;
    };
    this.onProgress({ phase: 'done', done: 1, total: 1 });
    const report = simReport({
      seed: this.plan.seed,
      sku: this.sku,
      lateBuyers: this.shape.lateBuyers,
      lateWon: this.lateWon,
      wallet: { paid: this.walletPaid, refused: this.walletRefused },
      outcomes,
      reconciliation: this.judged(reconciliation),
    });
    if (this.scope === 'all') return report;
    report.lines[2] = ownLine(report.reconciliation, this.mine.size);
    return { ...report, global_reconciliation: reconciliation, lines: [...report.lines, globalLine(reconciliation)] };
  }
}
