import type { DriverRequest } from './driver.ts';
import type { OrdersContext } from './orders.bench.ts';
import type { OrdersCounts } from './options.ts';
import { seedSkus } from './orders.stock.ts';
import { startProvider, type Provider } from './recovery.provider.ts';
import { startFlashpayServer, type FlashpayServer } from './servers.ts';
import { ratio } from './stats.ts';
import { all, post, rotate, targetOf, type FlashRun } from './flash.support.ts';
import { loadConfig } from '../src/platform/config.ts';
import { payTimeoutOf } from '../src/platform/provider.config.ts';
import { channelClient } from '../src/payments/index.ts';
import { reconcile } from '../src/reconcile/index.ts';

// Issue 38 item 3, W1: wallet pays against card pays of one tenant, 64 buyers at once, measured in
// the same run through the same driver, rounds rotating. Before the revenue buckets every wallet
// pay of a tenant updated its one REVENUE row and waited for the previous pay's commit; with them,
// each wallet pay was still a durable commit of its own while card pays' commits are grouped. Now
// wallet pays share commits too (pay.claims.ts groupClaims). W1's ratio is wallet / card pays per second.
// The orders are created first, untimed; only the pays are timed. The provider double runs in a
// process of its own (as P3 and P6 run it), so a card pay is a real HTTP charge.

/** A tenant of its own: reconciliation judges W1's orders and wallets alone. */
const W1_TENANT = 'bench-w1';
/** Every buyer's wallet holds far more than its pays cost (1,990 each): no pay is refused. */
const CREDIT_MINOR = 1_000_000_000;
const CREDIT_CONCURRENCY = 16;
/** Pays of each kind before the timed rounds (JIT, sockets, prepared statements); fewer when the run's warm-up is. */
const WARMUP_PAYS = 256;

export interface WalletReport {
  runs: FlashRun[];
  ok: boolean;
}

interface Buyer {
  userId: string;
  token: string;
}

async function creditAll(server: FlashpayServer, buyers: readonly Buyer[]): Promise<void> {
  const admin = await server.deps.signer.sign({ tenantId: W1_TENANT, userId: 'w1-admin', scope: 'admin' }, 3600);
  for (let i = 0; i < buyers.length; i += CREDIT_CONCURRENCY) {
    await Promise.all(
      buyers.slice(i, i + CREDIT_CONCURRENCY).map(async (buyer) => {
        const response = await fetch(`${server.url}/v1/admin/wallets/${encodeURIComponent(buyer.userId)}/credits`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${admin}`,
            'idempotency-key': `w1-credit-${buyer.userId}`,
          },
          body: JSON.stringify({ amount: CREDIT_MINOR, reason: 'bench: W1 buyers top up' }),
        });
        if (response.status !== 201) throw new Error(`W1 credit of ${buyer.userId}: HTTP ${response.status}`);
      }),
    );
  }
}

/** Creates `count` orders of `sku` (untimed), buyer i % buyers for order i; answers their pay requests in that order. */
async function payRequests(
  ctx: OrdersContext,
  server: FlashpayServer,
  buyers: readonly Buyer[],
  sku: string,
  count: number,
  method: 'wallet' | 'channel',
  concurrency: number,
): Promise<DriverRequest[]> {
  const prefix = `w1-${sku}-`;
  const creates = Array.from({ length: count }, (_, i) =>
    post('/v1/orders', buyers[i % buyers.length]!.token, `${prefix}${i}`, { sku, quantity: 1 }),
  );
  const created = await ctx.driver.run({ origin: server.url, concurrency, requests: creates });
  if (!all(created, 201)) throw new Error(`W1: creating ${sku} orders answered ${JSON.stringify(created.statuses)}`);
  const rows = await server.deps.db.query<{ key: string; order_id: string }>(
    `SELECT idempotency_key AS key, response_body::jsonb->>'order_id' AS order_id FROM idempotency_keys
     WHERE tenant_id = $1 AND operation = 'create_order' AND starts_with(idempotency_key, $2)`,
    [W1_TENANT, prefix],
  );
  const orderOf = new Map(rows.rows.map((r) => [r.key, r.order_id]));
  return creates.map((_, i) => {
    const orderId = orderOf.get(`${prefix}${i}`);
    if (!orderId) throw new Error(`W1: no order for ${prefix}${i}`);
    return post(`/v1/orders/${orderId}/pay`, buyers[i % buyers.length]!.token, `${prefix}${i}/pay`, { method });
  });
}

/** What the database says after W1: the ledger, revenue, floors and every paid order. */
async function checkLedger(server: FlashpayServer, walletPays: number) {
  const row = (
    await server.deps.db.query<{ ledger: string; revenue: string; negative: number; wallet_paid: number }>(
      `SELECT (SELECT coalesce(sum(balance), 0) FROM wallet_accounts WHERE tenant_id = $1)::text AS ledger,
              (SELECT coalesce(sum(balance), 0) FROM wallet_accounts WHERE tenant_id = $1 AND kind = 'REVENUE')::text AS revenue,
              (SELECT count(*) FROM wallet_accounts WHERE tenant_id = $1 AND kind <> 'FUNDING' AND balance < 0)::int AS negative,
              (SELECT count(*) FROM wallet_transfers WHERE tenant_id = $1 AND kind = 'DEBIT')::int AS wallet_paid`,
      [W1_TENANT],
    )
  ).rows[0]!;
  const revenue = Number(row.revenue);
  const ok =
    row.ledger === '0' && row.negative === 0 && row.wallet_paid === walletPays && revenue === walletPays * 1990;
  return {
    ok,
    text: `ledger sum ${row.ledger}, revenue ${revenue} for ${row.wallet_paid} debits, ${row.negative} balances below 0`,
  };
}

async function measure(ctx: OrdersContext, server: FlashpayServer, provider: Provider, counts: OrdersCounts) {
  const n = Math.max(counts.concurrency, Math.round(counts.requests / 2));
  const buyers = await Promise.all(
    Array.from({ length: Math.max(counts.concurrency, Math.min(counts.users, n)) }, async (_, i) => {
      const userId = `w1-${i}`;
      return {
        userId,
        token: await server.deps.signer.sign({ tenantId: W1_TENANT, userId, scope: 'buyer' }, 24 * 3600),
      };
    }),
  );
  await seedSkus(
    server.deps.db,
    [
      { sku: 'w1/warm', stock: 2 * WARMUP_PAYS },
      { sku: 'w1/wallet', stock: n },
      { sku: 'w1/card', stock: n },
    ],
    W1_TENANT,
  );
  await creditAll(server, buyers);
  const c = counts.concurrency;
  const warmup = Math.min(WARMUP_PAYS, counts.warmup);
  const warm = await payRequests(ctx, server, buyers, 'w1/warm', 2 * warmup, 'wallet', c);
  await ctx.driver.run({ origin: server.url, concurrency: c, requests: warm.slice(0, warmup) });
  const cardWarm = warm.slice(warmup).map((r) => ({ ...r, body: JSON.stringify({ method: 'channel' }) }));
  await ctx.driver.run({ origin: server.url, concurrency: c, requests: cardWarm });
  const wallet = await payRequests(ctx, server, buyers, 'w1/wallet', n, 'wallet', c);
  const card = await payRequests(ctx, server, buyers, 'w1/card', n, 'channel', c);
  const targets = await rotate(
    ctx,
    [
      { name: 'wallet pays', origin: server.url, requests: wallet },
      { name: 'card pays', origin: server.url, requests: card },
    ],
    counts,
  );
  const ledger = await checkLedger(server, n + warmup);
  const report = await reconcile(
    server.deps.db,
    channelClient(provider.url, payTimeoutOf(server.deps.config, 'fake')),
    W1_TENANT,
  );
  const walletTarget = targetOf(targets, 'wallet pays');
  const cardTarget = targetOf(targets, 'card pays');
  return {
    id: 'W1',
    description: `${n} wallet pays vs ${n} card pays, one tenant, ${c} buyers at once`,
    targets,
    ratios: { 'wallet / card': ratio(walletTarget.perSecond, cardTarget.perSecond) },
    checks: [
      ledger.text,
      // Judged on mismatches and orders: no relay runs here, so the outbox's events stay pending.
      `reconciliation: ${report.mismatches.length} mismatches, ${report.pending_orders.length} orders pending`,
    ],
    ok:
      all(walletTarget, 200) &&
      all(cardTarget, 200) &&
      ledger.ok &&
      report.mismatches.length === 0 &&
      report.pending_orders.length === 0,
  } satisfies FlashRun;
}

export async function runWalletBench(ctx: OrdersContext, counts: OrdersCounts): Promise<WalletReport> {
  const provider = await startProvider('process', 0);
  try {
    const config = { ...loadConfig(), logLevel: 'silent' };
    const server = await startFlashpayServer(ctx.databaseUrl, config, [], {
      url: provider.url,
      secret: provider.secret,
    });
    try {
      ctx.log(`wallet (issue 38): W1 wallet vs card pays, ${counts.concurrency} buyers`);
      const run = await measure(ctx, server, provider, counts);
      return { runs: [run], ok: run.ok };
    } finally {
      await server.close();
    }
  } finally {
    await provider.close();
  }
}
