import type { Stack } from './stack.ts';

export const TENANT = 'tenant-a';

export async function createSku(stack: Stack, sku: Record<string, unknown>, tenant = TENANT): Promise<void> {
  const admin = await stack.token(tenant, 'ops', 'admin');
  const result = await stack.call('POST', '/v1/admin/skus', {
    token: admin,
    body: { name: `SKU ${String(sku.sku)}`, price: 1990, ...sku },
  });
  if (result.status !== 201) throw new Error(`SKU setup failed: ${result.status} ${result.text}`);
}

export async function skuCounters(stack: Stack, sku: string, tenant = TENANT) {
  const admin = await stack.token(tenant, 'ops', 'admin');
  const result = await stack.call('GET', `/v1/admin/skus/${sku}`, { token: admin });
  return result.body as {
    total: number;
    available: number;
    held: number;
    confirmed: number;
    released: number;
    refunded_shipped: number;
  };
}

export async function placeOrder(stack: Stack, token: string, key: string, body: Record<string, unknown>) {
  return stack.call('POST', '/v1/orders', { token, body, headers: { 'idempotency-key': key } });
}
