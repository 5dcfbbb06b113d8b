import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { statementName } from '../../src/platform/tracing.db.ts';
import { tracingWanted } from '../../src/platform/tracing.ts';
import { FAULT_TENANT, startFaultStack, type FaultStack } from '../faults/support.ts';
import { waitFor } from '../support/poll.ts';
import { KIND, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from './otlp-receiver.ts';

// CONTRACT.md "Traces": OpenTelemetry's own variables turn tracing on, an incoming traceparent is
// continued through the request, its transactions and its provider call, and the order's event
// delivery carries the trace onward. A real `flashpay start` exports to a real OTLP/HTTP receiver.

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

async function buyerCall(
  stack: FaultStack,
  path: string,
  token: string,
  key: string,
  traceparent: string,
  body?: unknown,
) {
  const response = await fetch(`${stack.proc.api}${path}`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'idempotency-key': key,
      traceparent,
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** The spans of `traceId` below `root` (a span id), breadth first. */
function descendants(spans: ReceivedSpan[], rootId: string): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  let frontier = [rootId];
  while (frontier.length > 0) {
    const next = spans.filter((s) => frontier.includes(s.parentSpanId));
    out.push(...next);
    frontier = next.map((s) => s.spanId);
  }
  return out;
}

describe('traces (issue 53)', () => {
  const stacks: FaultStack[] = [];
  const receivers: OtlpReceiver[] = [];
  afterAll(async () => {
    for (const stack of stacks) await stack.close();
    for (const receiver of receivers) await receiver.close();
  });

  it('TR-01: a pay with a traceparent is one trace: server span, transactions, the provider call and the double that answered it, the outbox delivery and the consumer; log lines carry the ids', async () => {
    const receiver = await startOtlpReceiver();
    receivers.push(receiver);
    const stack = await startFaultStack({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'flashpay-tr01',
        OTEL_BSP_SCHEDULE_DELAY: '50',
        FLASHPAY_LOG_LEVEL: 'info',
      },
    });
    stacks.push(stack);
    expect(
      (await stack.adminCall('POST', '/v1/admin/skus', { sku: 'tee', name: 'Tee', price: 1990, stock: 3 })).status,
    ).toBe(201);
    const buyer = await stack.signer.sign({ tenantId: FAULT_TENANT, userId: 'alice', scope: 'buyer' });

    const createTrace = hex(16);
    const created = await buyerCall(stack, '/v1/orders', buyer, 'tr01-create-key', `00-${createTrace}-${hex(8)}-01`, {
      sku: 'tee',
    });
    expect(created.status).toBe(201);
    const orderId = String(created.body.order_id);
    const payTrace = hex(16);
    const callerSpan = hex(8);
    const paid = await buyerCall(
      stack,
      `/v1/orders/${orderId}/pay`,
      buyer,
      'tr01-pay-key',
      `00-${payTrace}-${callerSpan}-01`,
    );
    expect(paid).toMatchObject({ status: 200, body: { status: 'PAID' } });

    // The outbox row keeps the trace of the transition that wrote it.
    const row = await stack.db.pool.query<{ traceparent: string | null }>(
      `SELECT traceparent FROM outbox WHERE order_id = $1 AND event_type = 'ORDER_PAID'`,
      [orderId],
    );
    expect(row.rows[0]?.traceparent).toMatch(new RegExp(`^00-${payTrace}-[0-9a-f]{16}-01$`));

    // Wait for the consumer's span: the last hop of the trace.
    const inTrace = () => receiver.spans.filter((s) => s.traceId === payTrace);
    await waitFor(
      async () => inTrace().some((s) => s.kind === KIND.SERVER && /fulfillment\/events/.test(s.name)),
      'the consumer span of the pay trace',
      30_000,
      50,
    );
    const spans = inTrace();
    expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['flashpay-tr01']));

    const server = spans.find((s) => s.kind === KIND.SERVER && s.name === 'POST /v1/orders/:id/pay');
    expect(server?.parentSpanId).toBe(callerSpan);
    expect(server?.attributes['http.response.status_code']).toBe(200);
    const below = descendants(spans, server!.spanId);

    // Transactions: named by their statements, never carrying a value of them.
    const txs = below.filter((s) => s.attributes['db.system.name'] === 'postgresql');
    expect(txs.length).toBeGreaterThanOrEqual(2);
    for (const tx of txs) {
      expect(tx.kind).toBe(KIND.CLIENT);
      expect((tx.attributes['db.statements'] as string[]).length).toBeGreaterThan(0);
      expect(JSON.stringify(tx.attributes)).not.toMatch(new RegExp(`${orderId}|tr01-pay-key|alice`));
    }

    // The provider call is a client span, and the double received its traceparent (its server span is the child).
    const charge = below.find((s) => s.name === 'provider charge');
    expect(charge).toMatchObject({
      kind: KIND.CLIENT,
      attributes: { 'flashpay.provider': 'fake', 'flashpay.order_id': orderId, 'flashpay.provider.answer': 'CHARGED' },
    });
    const atDouble = spans.find((s) => s.kind === KIND.SERVER && s.parentSpanId === charge!.spanId);
    expect(atDouble?.name).toBe('POST /charge');

    // The group commit the pay joined links to it, and the pay's span links back.
    const groups = below.filter((s) => s.name === 'group commit');
    expect(groups.length).toBeGreaterThanOrEqual(1);
    // Each links to the span the pay was in when it joined (the request's, or one of its children).
    const ofThePay = new Set([server!.spanId, ...below.map((s) => s.spanId)]);
    for (const group of groups) expect(group.links.some((l) => ofThePay.has(l.spanId))).toBe(true);

    // Delivery: the relay's producer span is a child of the transaction that wrote the event, and
    // the consumer's server span a child of the delivery (the http sink's traceparent header).
    const writer = row.rows[0]!.traceparent!.split('-')[2];
    const delivery = spans.find((s) => s.kind === KIND.PRODUCER && s.parentSpanId === writer);
    expect(delivery?.name).toMatch(/^outbox deliver/);
    const consumer = spans.find((s) => s.kind === KIND.SERVER && s.parentSpanId === delivery!.spanId);
    expect(consumer?.name).toMatch(/^POST \/v1\/fulfillment\/events/);
    expect(consumer?.attributes['http.response.status_code']).toBe(200);

    // The create went in its own trace, continued the same way.
    expect(receiver.spans.some((s) => s.traceId === createTrace && s.name === 'POST /v1/orders')).toBe(true);

    // Log lines written during the pay name its trace.
    const logged = stack.proc
      .stderr()
      .split('\n')
      .filter((line) => line.includes(`"trace_id":"${payTrace}"`));
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.every((line) => /"span_id":"[0-9a-f]{16}"/.test(line))).toBe(true);
  }, 120_000);

  it('TR-02: with the variables unset (or the exporter `none`) nothing is exported, no hook runs and no outbox row carries a trace', async () => {
    expect(tracingWanted({})).toBe(false);
    expect(tracingWanted({ OTEL_SERVICE_NAME: 'x' })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://h:4318', OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://h:4318', OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(tracingWanted({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://h:4318' })).toBe(true);
    expect(tracingWanted({ OTEL_TRACES_EXPORTER: 'otlp' })).toBe(true);

    const receiver = await startOtlpReceiver();
    receivers.push(receiver);
    const env: NodeJS.ProcessEnv = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_TRACES_EXPORTER: 'none',
      OTEL_BSP_SCHEDULE_DELAY: '50',
      FLASHPAY_LOG_LEVEL: 'info',
    };
    const stack = await startFaultStack({ env });
    stacks.push(stack);
    expect(
      (await stack.adminCall('POST', '/v1/admin/skus', { sku: 'tee', name: 'Tee', price: 1990, stock: 3 })).status,
    ).toBe(201);
    const buyer = await stack.signer.sign({ tenantId: FAULT_TENANT, userId: 'bob', scope: 'buyer' });
    const trace = hex(16);
    const created = await buyerCall(stack, '/v1/orders', buyer, 'tr02-create', `00-${trace}-${hex(8)}-01`, {
      sku: 'tee',
    });
    const orderId = String(created.body.order_id);
    expect(
      (await buyerCall(stack, `/v1/orders/${orderId}/pay`, buyer, 'tr02-pay', `00-${trace}-${hex(8)}-01`)).body.status,
    ).toBe('PAID');
    // The event was delivered (the consumer shipped it): the whole path ran.
    await waitFor(
      async () =>
        (await stack.db.pool.query(`SELECT 1 FROM outbox WHERE order_id = $1 AND published_at IS NOT NULL`, [orderId]))
          .rowCount === 1,
      'the PAID event delivered',
      30_000,
      50,
    );
    const rows = await stack.db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM outbox WHERE traceparent IS NOT NULL`,
    );
    expect(rows.rows[0]?.n).toBe(0);
    // A 50 ms export delay has passed many times over by now: nothing came, and no log line names a trace.
    expect(receiver.requests).toEqual([]);
    expect(stack.proc.stderr()).not.toMatch(/trace_id/);
  }, 120_000);

  it("TR-03: http/protobuf (the specification's default protocol) exports the same spans as protobuf", async () => {
    const receiver = await startOtlpReceiver();
    receivers.push(receiver);
    const stack = await startFaultStack({
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_BSP_SCHEDULE_DELAY: '50' },
    });
    stacks.push(stack);
    const trace = hex(16);
    const response = await fetch(`${stack.proc.api}/v1/admin/skus/none`, {
      headers: { authorization: `Bearer ${stack.admin}`, traceparent: `00-${trace}-${hex(8)}-01` },
    });
    expect(response.status).toBe(404);
    // The trace id's 16 bytes appear verbatim in a protobuf export of its spans.
    const id = Buffer.from(trace, 'hex');
    await waitFor(
      async () => receiver.protobuf.some((body) => body.includes(id)),
      'a protobuf export of the trace',
      30_000,
      50,
    );
    expect(receiver.requests.every((r) => r.startsWith('POST /v1/traces application/x-protobuf'))).toBe(true);
  }, 120_000);

  it('TR-05: a recovery pass and a reconciliation run are traces of their own, linked to the request that ran them and naming the orders they touched', async () => {
    const receiver = await startOtlpReceiver();
    receivers.push(receiver);
    const stack = await startFaultStack({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '50',
      },
      args: ['--no-workers'],
    });
    stacks.push(stack);
    expect(
      (await stack.adminCall('POST', '/v1/admin/skus', { sku: 'tee', name: 'Tee', price: 1990, stock: 3 })).status,
    ).toBe(201);
    const buyer = await stack.signer.sign({ tenantId: FAULT_TENANT, userId: 'carol', scope: 'buyer' });
    const created = await buyerCall(stack, '/v1/orders', buyer, 'tr05-create', `00-${hex(16)}-${hex(8)}-01`, {
      sku: 'tee',
    });
    const orderId = String(created.body.order_id);
    // The provider books the charge and answers 500: the pay is UNKNOWN, recovery's to converge.
    await fetch(`${stack.proc.channel}/_control/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ op: 'charge', kind: 'ERROR_500', times: 1 }),
    });
    expect(
      (await buyerCall(stack, `/v1/orders/${orderId}/pay`, buyer, 'tr05-pay', `00-${hex(16)}-${hex(8)}-01`)).body
        .status,
    ).toBe('UNKNOWN');

    const operatorTrace = hex(16);
    const run = await fetch(`${stack.proc.api}/v1/admin/recovery/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.admin}`, traceparent: `00-${operatorTrace}-${hex(8)}-01` },
    });
    expect(run.status).toBe(200);
    const reconciled = await fetch(`${stack.proc.api}/v1/admin/reconciliation`, {
      headers: { authorization: `Bearer ${stack.admin}`, traceparent: `00-${operatorTrace}-${hex(8)}-01` },
    });
    expect(reconciled.status).toBe(200);

    const pass = await waitFor(
      async () =>
        receiver.spans.find(
          (s) =>
            s.name === 'recovery pass' &&
            (s.attributes['flashpay.order_ids'] as string[] | undefined)?.includes(orderId),
        ),
      'the recovery pass span',
      30_000,
      50,
    );
    // The request's span ends after its answer: it may come in a later export than the pass's.
    const request = await waitFor(
      async () => receiver.spans.find((s) => s.traceId === operatorTrace && s.name === 'POST /v1/admin/recovery/run'),
      'the recovery run request span',
      30_000,
      50,
    );
    expect(pass.parentSpanId).toBe('');
    expect(pass.traceId).not.toBe(operatorTrace);
    expect(pass.links.map((l) => l.spanId)).toContain(request.spanId);
    // Its provider query of the order is in its trace.
    const query = receiver.spans.find((s) => s.traceId === pass.traceId && s.name === 'provider query');
    expect(query?.attributes['flashpay.order_id']).toBe(orderId);
    // The PAID it reached wrote an event that keeps the pass's trace.
    const row = await stack.db.pool.query<{ traceparent: string }>(
      `SELECT traceparent FROM outbox WHERE order_id = $1`,
      [orderId],
    );
    expect(row.rows[0]?.traceparent.split('-')[1]).toBe(pass.traceId);

    const reconciliation = await waitFor(
      async () => receiver.spans.find((s) => s.name === 'reconciliation' && s.parentSpanId === ''),
      'the reconciliation span',
      30_000,
      50,
    );
    expect(reconciliation.traceId).not.toBe(operatorTrace);
    expect(typeof reconciliation.attributes['flashpay.mismatches']).toBe('number');
  }, 120_000);

  it('TR-04: a transaction span names statements by name or verb and table, never by their values', () => {
    expect(statementName({ name: 'order-insert', text: 'INSERT INTO orders VALUES ($1)', values: ['o-secret'] })).toBe(
      'order-insert',
    );
    expect(statementName('SELECT tenant_id FROM orders WHERE order_id = $1')).toBe('SELECT orders');
    expect(statementName({ text: `UPDATE outbox SET claimed_by = 'relay-1' WHERE event_id = 7` })).toBe(
      'UPDATE outbox',
    );
    expect(statementName('INSERT INTO payment_notifications (notify_id) VALUES ($1)')).toBe(
      'INSERT payment_notifications',
    );
    expect(statementName('BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL lock_timeout = 5000')).toBe('BEGIN');
    expect(statementName('WITH t AS (SELECT 1) UPDATE orders o SET status = $1')).toBe('WITH orders');
  });
});
