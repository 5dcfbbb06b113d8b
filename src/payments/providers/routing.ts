import type { Db } from '../../platform/db.ts';
import type { ProviderName } from '../../platform/provider.config.ts';
import type { ChannelClient, StatementLine } from '../channel.client.ts';

type Statement = { lines: StatementLine[]; net: number };

/** A provider's statement with every line naming it (issue 48): reconciliation matches on (provider, order). */
export function stampedWith<T extends Statement>(provider: ProviderName, statement: T): T {
  return { ...statement, lines: statement.lines.map((line) => ({ ...line, provider })) };
}

/** How many orders' recorded providers one router remembers (the oldest is forgotten first). */
const RECORDED_MAX = 10_000;

function remember(recorded: Map<string, ProviderName>, orderId: string, provider: ProviderName): void {
  if (recorded.size >= RECORDED_MAX) recorded.delete(recorded.keys().next().value!);
  recorded.set(orderId, provider);
}

/**
 * Each call goes to the provider that has the order's money (issue 48): the provider its pay
 * recorded on the order, else (orders paid before migration 180) its tenant's. A charge names its
 * customer ("<tenant>/<user>") and goes to the tenant's provider, which its PAYING transition has
 * just recorded; the other calls read the order (one indexed read beside a provider round trip). A
 * tenant that changed provider keeps its earlier orders queried, closed and refunded where they
 * were paid; an order whose provider has no adapter here answers UNKNOWN with the reason, never
 * another provider's answer. The statement is every provider's, each line naming its provider.
 */
export function tenantRouter(
  db: Db,
  clients: Map<ProviderName, ChannelClient>,
  providerOf: (tenant: string) => ProviderName,
): ChannelClient {
  const missing = (name: ProviderName) =>
    `the order's payment is at ${name}, which has no adapter configured here (set its credentials)`;
  // A recorded provider never changes (only CREATED → PAYING writes it, and no order returns to
  // CREATED): remembered, so recovery's repeated queries of an order read it once. Bounded.
  const recorded = new Map<string, ProviderName>();
  async function forOrder(orderId: string): Promise<ChannelClient | { unknown: string }> {
    let name = recorded.get(orderId);
    if (name === undefined) {
      const { rows } = await db.query<{ tenant_id: string; payment_provider: ProviderName | null }>(
        'SELECT tenant_id, payment_provider FROM orders WHERE order_id = $1',
        [orderId],
      );
      const row = rows[0];
      if (row?.payment_provider) remember(recorded, orderId, row.payment_provider);
      // An order that does not exist is no tenant's: the default provider answers (NOT_FOUND).
      name = row?.payment_provider ?? providerOf(row?.tenant_id ?? '');
    }
    return clients.get(name) ?? { unknown: missing(name) };
  }
  const single = clients.size === 1 ? [...clients.entries()][0] : undefined;
  return {
    async charge(merchantOrder, amount, notifyUrl, customer, paymentMethod) {
      const tenant = customer?.split('/')[0];
      const client = tenant !== undefined ? clients.get(providerOf(tenant)) : await forOrder(merchantOrder);
      if (!client) return { kind: 'UNKNOWN', reason: missing(providerOf(tenant ?? '')) };
      if ('unknown' in client) return { kind: 'UNKNOWN', reason: client.unknown };
      return client.charge(merchantOrder, amount, notifyUrl, customer, paymentMethod);
    },
    async query(merchantOrder) {
      const client = await forOrder(merchantOrder);
      return 'unknown' in client ? { kind: 'UNKNOWN', reason: client.unknown } : client.query(merchantOrder);
    },
    async close(merchantOrder) {
      const client = await forOrder(merchantOrder);
      return 'unknown' in client ? { kind: 'UNKNOWN', reason: client.unknown } : client.close(merchantOrder);
    },
    async refund(merchantOrder, key, amount) {
      const client = await forOrder(merchantOrder);
      return 'unknown' in client
        ? { kind: 'UNKNOWN', reason: client.unknown }
        : client.refund(merchantOrder, key, amount);
    },
    async statement() {
      const names = [...clients.keys()];
      const statements = await Promise.all(
        names.map(async (name) => stampedWith(name, await clients.get(name)!.statement())),
      );
      const lines: StatementLine[] = statements.flatMap((s) => s.lines);
      return { lines, net: statements.reduce((sum, s) => sum + s.net, 0) };
    },
    // One provider: its pages (incremental reconciliation) and its fulfilment list, as before.
    ...(single?.[1].statementPage
      ? {
          statementPage: async (after: string | null, limit: number) =>
            stampedWith(single[0], await single[1].statementPage!(after, limit)),
        }
      : {}),
    ...(single?.[1].fulfilled ? { fulfilled: () => single[1].fulfilled!() } : {}),
  };
}
