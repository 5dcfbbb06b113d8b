import type { Db } from '../../platform/db.ts';
import type { ProviderName } from '../../platform/provider.config.ts';
import type { ChannelClient, StatementLine } from '../channel.client.ts';

/**
 * Tenants on different providers: each call goes to the provider of the order's tenant. A charge
 * names its customer ("<tenant>/<user>"); the other calls read the order's tenant (one indexed read
 * beside a provider round trip). The statement is every provider's, concatenated: reconciliation
 * matches lines to orders by merchant order, which is flashpay's order id at every provider.
 */
export function tenantRouter(
  db: Db,
  clients: Map<ProviderName, ChannelClient>,
  providerOf: (tenant: string) => ProviderName,
): ChannelClient {
  const client = (tenant: string) => clients.get(providerOf(tenant))!;
  async function forOrder(orderId: string): Promise<ChannelClient> {
    const { rows } = await db.query<{ tenant_id: string }>('SELECT tenant_id FROM orders WHERE order_id = $1', [
      orderId,
    ]);
    // An order that does not exist is no tenant's: the default provider answers (NOT_FOUND).
    return client(rows[0]?.tenant_id ?? '');
  }
  return {
    async charge(merchantOrder, amount, notifyUrl, customer, paymentMethod) {
      const tenant = customer?.split('/')[0];
      return (tenant !== undefined ? client(tenant) : await forOrder(merchantOrder)).charge(
        merchantOrder,
        amount,
        notifyUrl,
        customer,
        paymentMethod,
      );
    },
    query: async (merchantOrder) => (await forOrder(merchantOrder)).query(merchantOrder),
    close: async (merchantOrder) => (await forOrder(merchantOrder)).close(merchantOrder),
    refund: async (merchantOrder, key, amount) => (await forOrder(merchantOrder)).refund(merchantOrder, key, amount),
    async statement() {
      const statements = await Promise.all([...clients.values()].map((c) => c.statement()));
      const lines: StatementLine[] = statements.flatMap((s) => s.lines);
      return { lines, net: statements.reduce((sum, s) => sum + s.net, 0) };
    },
  };
}
