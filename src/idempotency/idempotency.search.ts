import type { Executor } from '../platform/db.ts';

// The operator console's search (issue 36): which orders an Idempotency-Key answered, whoever used
// it. Read from the stored answers (a create's and a pay's both name `order_id`), by the index
// idempotency_keys_key_tenant (migration 170). Bounded: a key is used by few users.
const KEY_MATCHES_MAX = 20;

export async function findOrderIdsByKey(db: Executor, tenantId: string | undefined, key: string): Promise<string[]> {
  const result = await db.query<{ order_id: string }>(
    `SELECT DISTINCT substring(response_body from '"order_id":"([^"]+)"') AS order_id FROM idempotency_keys
     WHERE ($1::text IS NULL OR tenant_id = $1) AND idempotency_key = $2 AND state = 'DONE'
       AND substring(response_body from '"order_id":"([^"]+)"') IS NOT NULL
     LIMIT ${KEY_MATCHES_MAX}`,
    [tenantId ?? null, key],
  );
  return result.rows.map((r) => r.order_id);
}
