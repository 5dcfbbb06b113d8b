/**
 * A flash sale driven from outside, through HAProxy, by buyers who do what the contract asks of a
 * client: on a 502/503/504 or a dropped connection, send the same request again with the same
 * Idempotency-Key until it is answered.
 */
export interface SaleOptions {
  api: string;
  sku: string;
  buyers: number;
  concurrency: number;
  token(user: string): Promise<string>;
  /** Called once, after this many creates were answered 201. */
  faultAfter?: number;
  fault?: () => Promise<void>;
  /** Key prefix: a sale run twice must not replay the first run's answers. */
  run: string;
}

export interface SaleOutcome {
  /** Orders answered 201, by buyer. */
  created: Map<string, string>;
  /** Orders whose pay was answered 200 PAID. */
  paid: Set<string>;
  /** Each created order's pay answer, as `200 PAID`, `200 UNKNOWN`, `409 <code>` (issue 55). */
  payAnswers: Map<string, string>;
  /** Every status answered, including the retried ones (a 409 with its code: `409 SOLD_OUT`). */
  statuses: Map<string, number>;
  /** When the fault had happened (the killed node is gone). */
  faultAtMs: number | undefined;
  /** First write sent after the fault and answered (201 or 200): the outage as a buyer saw it. */
  firstWriteAfterFaultMs: number | undefined;
}

const RETRY_MS = 200;
const GIVE_UP_MS = 120_000;
const RETRYABLE = new Set([502, 503, 504]);

export async function runSale(options: SaleOptions): Promise<SaleOutcome> {
  const outcome: SaleOutcome = {
    created: new Map(),
    paid: new Set(),
    payAnswers: new Map(),
    statuses: new Map(),
    faultAtMs: undefined,
    firstWriteAfterFaultMs: undefined,
  };
  let faultDone: Promise<void> | undefined;
  const written = (sentAtMs: number) => {
    if (
      outcome.faultAtMs !== undefined &&
      sentAtMs >= outcome.faultAtMs &&
      outcome.firstWriteAfterFaultMs === undefined
    )
      outcome.firstWriteAfterFaultMs = Date.now();
  };
  const count = (status: string) => outcome.statuses.set(status, (outcome.statuses.get(status) ?? 0) + 1);

  const send = async (path: string, key: string, token: string, body?: unknown) => {
    const deadline = Date.now() + GIVE_UP_MS;
    for (;;) {
      const sentAtMs = Date.now();
      const response = await fetch(`${options.api}${path}`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'idempotency-key': key,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      }).catch(() => undefined); // a dropped connection: the same key again
      if (response && !RETRYABLE.has(response.status)) {
        const answer = (await response.json()) as Record<string, unknown>;
        count(response.status >= 400 ? `${response.status} ${String(answer.code)}` : String(response.status));
        // The first attempt still runs (its process or its database connection was cut): ask again.
        if (answer.code !== 'REQUEST_IN_PROGRESS') return { status: response.status, body: answer, sentAtMs };
      } else if (response) {
        count(String(response.status));
        await response.arrayBuffer();
      }
      if (Date.now() > deadline) throw new Error(`${path} (${key}) unanswered for ${GIVE_UP_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  };

  const buyer = async (index: number) => {
    const user = `${options.run}-b${index}`;
    const token = await options.token(user);
    const created = await send('/v1/orders', `${options.run}-c${index}`, token, { sku: options.sku });
    if (created.status !== 201) return;
    written(created.sentAtMs);
    const orderId = String(created.body.order_id);
    outcome.created.set(user, orderId);
    if (options.fault && outcome.created.size === options.faultAfter && !faultDone) {
      faultDone = options.fault().then(() => void (outcome.faultAtMs = Date.now()));
    }
    const paid = await send(`/v1/orders/${orderId}/pay`, `${options.run}-p${index}`, token);
    if (paid.status === 200) written(paid.sentAtMs);
    if (paid.status === 200 && paid.body.status === 'PAID') outcome.paid.add(orderId);
    outcome.payAnswers.set(
      orderId,
      `${paid.status} ${String(paid.status === 200 ? paid.body.status : paid.body.code)}`,
    );
  };

  let next = 0;
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (next < options.buyers) await buyer(next++);
    }),
  );
  await faultDone;
  return outcome;
}

/** GETs as a buyer or admin, retried while the cluster is between primaries. */
export async function getJson(api: string, path: string, token: string): Promise<Record<string, unknown>> {
  const deadline = Date.now() + GIVE_UP_MS;
  for (;;) {
    const response = await fetch(`${api}${path}`, { headers: { authorization: `Bearer ${token}` } }).catch(
      () => undefined,
    );
    if (response?.status === 200) return (await response.json()) as Record<string, unknown>;
    await response?.arrayBuffer();
    if (Date.now() > deadline) throw new Error(`GET ${path}: ${response?.status ?? 'no answer'}`);
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

/** Reconciliation once recovery has converged every order (nothing pending), or the last report. */
export async function settledReconciliation(api: string, admin: string, timeoutMs = 90_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const report = (await getJson(api, '/v1/admin/reconciliation', admin)) as {
      ok: boolean;
      pending: number;
      mismatches: { class: string; order_id?: string }[];
    };
    if ((report.pending === 0 && report.mismatches.length === 0) || Date.now() > deadline) return report;
    // Recovery runs every few seconds in the worker; an admin run converges sooner.
    await fetch(`${api}/v1/admin/recovery/run`, { method: 'POST', headers: { authorization: `Bearer ${admin}` } })
      .then((r) => r.arrayBuffer())
      .catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}
