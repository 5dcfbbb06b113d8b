import type { FastifyInstance } from 'fastify';
import { fail } from '../platform/http.ts';
import { describeRule } from './faults.ts';
import { newId, type ChargeRecord } from './ledger.ts';
import { DEFAULT_SEED } from './notifier.ts';
import { assertHttpUrl, type ChannelDeps } from './channel.routes.ts';
import type { CallbacksBody, FaultBody, SendBody, SettingsBody } from './channel.schemas.ts';
import { channelSchemas as s } from './channel.openapi.ts';
import type { Dialect } from './dialect.ts';

// The scripting API a test drives the channel with. Registered only with `control: true`, so a
// channel run as a stand-in provider cannot be scripted by whoever can reach it.

function armFault(deps: ChannelDeps, body: FaultBody) {
  const delays = body.kind === 'DELAY_REQUEST' || body.kind === 'DELAY_RESPONSE';
  if (delays && body.ms === undefined) fail('VALIDATION', `body.ms is required for ${body.kind}`);
  if (body.kind === 'DECLINE' && body.op !== 'charge') fail('VALIDATION', 'DECLINE applies to op charge only');
  if (body.kind === 'REFUSE' && body.op !== 'fulfil') fail('VALIDATION', 'REFUSE applies to op fulfil only');
  const rule = deps.faults.arm({
    op: body.op,
    kind: body.kind,
    merchantOrder: body.merchant_order,
    ms: body.ms ?? 0,
    remaining: body.times ?? 1,
  });
  return describeRule(rule);
}

function describeCallbacks(deps: ChannelDeps) {
  const settings = deps.notifier.getCallbacks();
  return { mode: settings.mode, duplicates: settings.duplicates, delay_ms: settings.delayMs, seed: settings.seed };
}

function describeSettings(deps: ChannelDeps) {
  const retry = deps.notifier.getRetry();
  return { notify_retry_base_ms: retry.retryBaseMs, notify_max_attempts: retry.maxAttempts };
}

/** Looks the charge up under its lock, so a forged notification can default to its url and txn. */
async function findCharge(deps: ChannelDeps, merchantOrder: string): Promise<ChargeRecord | undefined> {
  let found: ChargeRecord | undefined;
  await deps.store.withOrder(merchantOrder, async (view) => {
    found = view.current;
    return { outcome: { httpStatus: 200, body: {} } };
  });
  return found;
}

async function sendNotification(deps: ChannelDeps, body: SendBody) {
  if (body.notify_url !== undefined) assertHttpUrl(body.notify_url, 'notify_url', deps.notifyHosts);
  const charge = await findCharge(deps, body.merchant_order);
  const notifyUrl = body.notify_url ?? charge?.notifyUrl ?? undefined;
  if (notifyUrl === undefined)
    fail('VALIDATION', `body.notify_url is required: ${body.merchant_order} has no charge to take it from`);
  return deps.notifier.sendNow({
    kind: body.kind,
    merchantOrder: body.merchant_order,
    amount: body.amount,
    txn: body.txn ?? charge?.txn ?? newId('txn'),
    notifyUrl,
    notifyId: body.notify_id,
  });
}

export function registerControlRoutes(app: FastifyInstance, deps: ChannelDeps, dialect?: Dialect): void {
  app.post('/_control/reset', { schema: s.reset }, async () => {
    deps.faults.clear();
    deps.requests.clear();
    deps.received?.clear();
    dialect?.reset?.();
    await deps.store.accounts.clear();
    await deps.fulfilments?.clear();
    await deps.notifier.reset();
    await deps.store.reset();
    return { ok: true };
  });

  app.post('/_control/faults', { schema: s.armFault }, async (request) => armFault(deps, request.body as FaultBody));
  app.get('/_control/faults', { schema: s.listFaults }, async () => deps.faults.list().map(describeRule));

  app.post('/_control/callbacks', { schema: s.setCallbacks }, async (request) => {
    const body = request.body as CallbacksBody;
    const delayMs = body.delay_ms ?? [0, 0];
    if (delayMs[0] > delayMs[1]) fail('VALIDATION', 'body.delay_ms must be [min, max] with min <= max');
    deps.notifier.setCallbacks({
      mode: body.mode,
      duplicates: body.duplicates ?? 1,
      delayMs,
      seed: body.seed ?? DEFAULT_SEED,
    });
    return describeCallbacks(deps);
  });
  app.get('/_control/callbacks', { schema: s.getCallbacks }, async () => describeCallbacks(deps));
  app.get('/_control/callbacks/held', { schema: s.listHeld }, async () => deps.notifier.heldList());

  app.post('/_control/callbacks/release', { schema: s.release }, async (request) => {
    const { ids } = request.body as { ids: string[] };
    await deps.notifier.release(ids);
    return { released: ids };
  });

  app.post('/_control/callbacks/send', { schema: s.send }, async (request) =>
    sendNotification(deps, request.body as SendBody),
  );

  app.get('/_control/requests', { schema: s.requests }, async () => ({
    ...deps.requests.snapshot(),
    ...(deps.received ? { received: deps.received.list() } : {}),
  }));
  app.get('/_control/notifications', { schema: s.notifications }, async () => deps.notifier.list());

  app.get('/_control/settings', { schema: s.getSettings }, async () => describeSettings(deps));
  app.post('/_control/settings', { schema: s.setSettings }, async (request) => {
    const body = request.body as SettingsBody;
    deps.notifier.setRetry({
      ...(body.notify_retry_base_ms !== undefined && { retryBaseMs: body.notify_retry_base_ms }),
      ...(body.notify_max_attempts !== undefined && { maxAttempts: body.notify_max_attempts }),
    });
    return describeSettings(deps);
  });
}
