// The commands of the model-based tests: each drives the real API (real HTTP, real PostgreSQL, the
// provider double with its fault controls) and updates the model from the answers the client got.
import fc from 'fast-check';
import type { HttpResult } from '../support/stack.ts';
import type { Model, OrderModel, Run } from './model.ts';
import { PAY_TIMEOUT_MS } from './world.ts';

type Cmd = fc.AsyncCommand<Model, Run>;

const fail = (message: string): never => {
  throw new Error(message);
};

export type PayFault = 'none' | 'decline' | 'lost' | 'late' | 'error' | 'reset';
export type CreateShape = { lines: 'one'; qty: 1 | 2 } | { lines: 'two' };

const pick = (model: Model, ref: number): OrderModel | undefined => model.orders[ref % model.orders.length];

async function create(run: Run, model: Model, user: string, shape: CreateShape): Promise<HttpResult> {
  const body =
    shape.lines === 'one'
      ? { sku: run.skus.a, quantity: shape.qty }
      : { lines: [{ sku: run.skus.a }, { sku: run.skus.b, quantity: 1 }] };
  const result = await run.world.call('POST', '/v1/orders', {
    token: await run.buyer(user),
    body,
    headers: { 'idempotency-key': run.next('c') },
  });
  if (result.status === 201) {
    model.orders.push({
      id: result.body.order_id as string,
      user,
      amount: result.body.amount as number,
      fresh: true,
      paid: false,
      declined: false,
      cancelled: false,
    });
  } else if (result.status !== 409 || !['SOLD_OUT', 'USER_LIMIT'].includes(result.body?.code))
    fail(`create answered ${result.status} ${result.text}`);
  return result;
}

async function armFault(run: Run, orderId: string, fault: PayFault): Promise<void> {
  const late = PAY_TIMEOUT_MS + 150;
  const rule = {
    none: undefined,
    decline: { kind: 'DECLINE' },
    lost: { kind: 'DELAY_RESPONSE', ms: late },
    late: { kind: 'DELAY_REQUEST', ms: late },
    error: { kind: 'ERROR_500' },
    reset: { kind: 'RESET_CONNECTION' },
  }[fault];
  if (rule) await run.world.control('POST', '/_control/faults', { op: 'charge', merchant_order: orderId, ...rule });
}

/** The answer, and whether the provider call may have timed out (a loaded box makes any call slow). */
type PayAnswer = HttpResult & { slow: boolean };

async function payRequest(run: Run, order: OrderModel, key: string): Promise<PayAnswer> {
  const token = await run.buyer(order.user);
  const started = Date.now();
  const result = await run.world.call('POST', `/v1/orders/${order.id}/pay`, {
    token,
    headers: { 'idempotency-key': key },
  });
  return { ...result, slow: Date.now() - started >= PAY_TIMEOUT_MS };
}

/** What a pay answer binds in the model; `expected` is the answer a fresh order must get. */
function applyPay(order: OrderModel, result: PayAnswer, fault: PayFault | 'crash'): void {
  const wasFresh = order.fresh;
  order.fresh = false;
  if (result.status === 409) {
    if (wasFresh) fail(`pay of fresh ${order.id} refused: ${result.text}`);
    return;
  }
  if (result.status !== 200) fail(`pay of ${order.id} answered ${result.status} ${result.text}`);
  const status = result.body.status as string;
  if (!['PAID', 'FAILED', 'UNKNOWN'].includes(status)) fail(`pay of ${order.id} answered status ${status}`);
  const expected = { none: 'PAID', decline: 'FAILED', lost: 'UNKNOWN', late: 'UNKNOWN' }[fault as string];
  // UNKNOWN is the truthful answer to any provider call that outlived the pay timeout.
  const excused = status === 'UNKNOWN' && result.slow;
  if (wasFresh && expected && status !== expected && !excused)
    fail(`pay of fresh ${order.id} with fault ${fault}: expected ${expected}, got ${status}`);
  if (status === 'PAID') {
    if (order.cancelled) fail(`${order.id} answered CANCELLED and then PAID`);
    order.paid = true;
  }
  if (status === 'FAILED' && fault === 'decline') order.declined = true;
}

function applyCancel(order: OrderModel, result: HttpResult): void {
  order.fresh = false;
  if (result.status === 200) {
    if (order.paid) fail(`${order.id} answered PAID and then cancelled`);
    order.cancelled = true;
  } else if (result.status !== 409) fail(`cancel of ${order.id} answered ${result.status} ${result.text}`);
}

async function cancel(run: Run, order: OrderModel): Promise<HttpResult> {
  if (run.broken?.cancel) {
    const broken = await run.broken.cancel(run, order);
    const text = JSON.stringify({ status: broken.orderStatus });
    return { status: broken.status, headers: new Headers(), text, body: JSON.parse(text) };
  }
  return run.world.call('POST', `/v1/orders/${order.id}/cancel`, { token: await run.buyer(order.user) });
}

const always = () => true;
const hasOrders = (m: Readonly<Model>) => m.orders.length > 0;

export const createCmd = (user: string, shape: CreateShape): Cmd => ({
  check: always,
  async run(model, run) {
    await create(run, model, user, shape);
  },
  toString: () => `create(${user}, ${JSON.stringify(shape)})`,
});

export const payCmd = (ref: number, fault: PayFault): Cmd => ({
  check: hasOrders,
  async run(model, run) {
    const order = pick(model, ref) as OrderModel;
    await armFault(run, order.id, fault);
    applyPay(order, await payRequest(run, order, run.next('p')), fault);
  },
  toString: () => `pay(#${ref}, ${fault})`,
});

export const cancelCmd = (ref: number): Cmd => ({
  check: hasOrders,
  async run(model, run) {
    const order = pick(model, ref) as OrderModel;
    applyCancel(order, await cancel(run, order));
  },
  toString: () => `cancel(#${ref})`,
});

/** Every hold of the run runs out: the clock passes the TTL and the expiry sweep runs. */
export const expireCmd = (): Cmd => ({
  check: hasOrders,
  async run(model, run) {
    run.world.clock.advance(run.holdTtlMs + 1);
    const swept = await run.world.call('POST', '/v1/admin/expiry/run', { token: await run.admin() });
    if (swept.status !== 200) fail(`expiry answered ${swept.status} ${swept.text}`);
    for (const order of model.orders) order.fresh = false;
  },
  toString: () => 'expireHolds()',
});

/** Held provider notifications of this run, delivered in the order `picks` chooses (each comes twice). */
export const deliverCmd = (picks: number[]): Cmd => ({
  check: hasOrders,
  async run(model, run) {
    await deliver(run, model, picks);
  },
  toString: () => `deliver(${JSON.stringify(picks)})`,
});

export async function deliver(run: Run, model: Model, picks?: number[]): Promise<void> {
  const ids = new Set(model.orders.map((o) => o.id));
  const held = (
    (await run.world.control('GET', '/_control/callbacks/held')) as Array<{ id: string; merchant_order: string }>
  )
    .filter((h) => ids.has(h.merchant_order))
    .map((h) => h.id);
  const chosen: string[] = [];
  for (const p of picks ?? held.map((_, i) => i)) {
    const left = held.filter((id) => !chosen.includes(id));
    if (left.length === 0) break;
    chosen.push(left[p % left.length] as string);
  }
  if (chosen.length > 0) await run.world.control('POST', '/_control/callbacks/release', { ids: chosen });
  await settleNotifications(run, ids);
}

/** Waits until no notification of these orders is still being delivered (held ones may stay held). */
export async function settleNotifications(run: Run, ids: Set<string>): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const all = (await run.world.control('GET', '/_control/notifications')) as Array<{
      merchant_order: string;
      status: string;
    }>;
    if (!all.some((n) => ids.has(n.merchant_order) && n.status === 'PENDING')) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  fail('notifications still PENDING after 30 s');
}

export const recoverCmd = (): Cmd => ({
  check: always,
  async run(_model, run) {
    await run.world.recover();
  },
  toString: () => 'recover()',
});

/** A pay whose process dies after the provider charged and before anything was recorded; restart. */
export const crashCmd = (ref: number): Cmd => ({
  check: hasOrders,
  async run(model, run) {
    const order = pick(model, ref) as OrderModel;
    const parked = run.world.parkNextPay();
    const paying = payRequest(run, order, run.next('p')).catch((error: Error) => error);
    const first = await Promise.race([parked.then(() => 'parked' as const), paying]);
    if (first !== 'parked') {
      run.world.unpark();
      if (first instanceof Error) throw first;
      return applyPay(order, first, 'crash');
    }
    order.fresh = false; // charged at the provider; the client never got an answer
    await run.world.crashRestart();
    await paying; // the cut connection: an error, never an answer
  },
  toString: () => `crashRestartDuringPay(#${ref})`,
});

export type BurstOp =
  | { op: 'create'; user: string; shape: CreateShape }
  | { op: 'pay'; ref: number; twice: 'no' | 'same-key' | 'new-key' }
  | { op: 'cancel'; ref: number };

/** Concurrent requests, started in the order fast-check's scheduler picks (printed on failure). */
export const burstCmd = (ops: BurstOp[]): Cmd => ({
  check: hasOrders,
  async run(model, run) {
    const s = run.scheduler;
    const gate = (label: string) => s.schedule(Promise.resolve(label), label);
    // Racing requests on one order: which one wins is the system's choice, not the model's.
    for (const op of ops) if (op.op !== 'create') (pick(model, op.ref) as OrderModel).fresh = false;
    const tasks = ops.map((op, i) => {
      if (op.op === 'create') return gate(`create#${i}`).then(() => create(run, model, op.user, op.shape));
      const order = pick(model, op.ref) as OrderModel;
      if (op.op === 'cancel') return gate(`cancel#${i}`).then(async () => applyCancel(order, await cancel(run, order)));
      const key = run.next('p');
      const once = () =>
        gate(`pay#${i}`).then(() => payRequest(run, order, op.twice === 'new-key' ? run.next('p') : key));
      return Promise.all(op.twice === 'no' ? [once()] : [once(), once()]).then((answers) => {
        for (const answer of answers) applyPay(order, answer, 'crash');
        const [a, b] = answers;
        if (
          op.twice === 'same-key' &&
          a &&
          b &&
          a.status === 200 &&
          b.status === 200 &&
          a.body.status !== b.body.status
        )
          fail(`one key, two answers for ${order.id}: ${a.body.status} / ${b.body.status}`);
      });
    });
    await s.waitFor(Promise.all(tasks));
  },
  toString: () => `burst(${JSON.stringify(ops)})`,
});

const user = fc.constantFrom('u0', 'u1', 'u2');
const shape: fc.Arbitrary<CreateShape> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({ lines: fc.constant('one' as const), qty: fc.constantFrom(1 as const, 2 as const) }),
  },
  { weight: 1, arbitrary: fc.record({ lines: fc.constant('two' as const) }) },
);
const ref = fc.nat({ max: 7 });
const fault = fc.oneof(
  { weight: 4, arbitrary: fc.constant<PayFault>('none') },
  { weight: 4, arbitrary: fc.constantFrom<PayFault>('decline', 'error', 'reset') },
  { weight: 2, arbitrary: fc.constantFrom<PayFault>('lost', 'late') },
);
const burstOp: fc.Arbitrary<BurstOp> = fc.oneof(
  fc.record({ op: fc.constant('create' as const), user, shape }),
  fc.record({
    op: fc.constant('pay' as const),
    ref,
    twice: fc.constantFrom('no' as const, 'same-key' as const, 'new-key' as const),
  }),
  fc.record({ op: fc.constant('cancel' as const), ref }),
);

export const commandArbitraries = [
  fc.tuple(user, shape).map(([u, s]) => createCmd(u, s)),
  fc.tuple(user, shape).map(([u, s]) => createCmd(u, s)),
  fc.tuple(ref, fault).map(([r, f]) => payCmd(r, f)),
  fc.tuple(ref, fault).map(([r, f]) => payCmd(r, f)),
  ref.map((r) => cancelCmd(r)),
  fc.constant(null).map(() => expireCmd()),
  fc.array(fc.nat({ max: 9 }), { maxLength: 6 }).map((p) => deliverCmd(p)),
  fc.constant(null).map(() => recoverCmd()),
  ref.map((r) => crashCmd(r)),
  ref.map((r) => crashCmd(r)),
  fc.array(burstOp, { minLength: 2, maxLength: 4 }).map((ops) => burstCmd(ops)),
  fc.array(burstOp, { minLength: 2, maxLength: 4 }).map((ops) => burstCmd(ops)),
];
