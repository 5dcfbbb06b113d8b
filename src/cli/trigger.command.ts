import { loadSecret, tokenSigner } from '../platform/auth.ts';
import { loadConfig, notifyUrlFor, tokenOptions } from '../platform/config.ts';
import { providerOfTenant, type ProviderConfig } from '../platform/provider.config.ts';
import { parseArgs, refuseUnknownFlags, stringFlag, UsageError } from '../platform/args.ts';
import { payTimeoutOf } from '../platform/provider.config.ts';
import { readRuntime } from '../runtime.ts';

// `flashpay trigger WHAT --order ID`: makes one provider-side thing happen to a real order through
// the fake channel's control API (`flashpay start --control` or `flashpay channel --control`).
export const TRIGGERS = {
  charged: 'the provider charges the order now; its notification settles it (PAID; a cancelled order is refunded)',
  declined: 'the order’s next charge is declined (pay it: FAILED, its units released)',
  refunded:
    'the provider refunds the order’s charge on its own (a dashboard refund); its notification makes the order REFUNDED, with no refund of ours',
  'duplicate-callback': 'the order’s last notification is delivered again, same notify_id (effect DUPLICATE)',
  'late-callback': 'a late copy of the order’s charge notification, under a new notify_id (nothing changes twice)',
  'lost-reply': 'the order’s next charge succeeds but its reply is lost (pay: UNKNOWN, then recovery finds it PAID)',
} as const;
export type Trigger = keyof typeof TRIGGERS;

// Longer than any pay timeout flashpay runs with, so the caller gives up before the reply comes.
const LOST_REPLY_EXTRA_MS = 2_000;

interface Target {
  api: string;
  channel: string;
  adminToken: string;
  controlToken: string | undefined;
  payTimeoutMs: number;
  notifyUrl: string;
  tenant: string;
  providers: ProviderConfig;
}

async function call(url: string, options: { method?: string; token?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(url, {
    method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const body: any = text ? JSON.parse(text) : undefined;
  if (!response.ok) throw new Error(`${url} answered ${response.status}: ${text.slice(0, 300)}`);
  return body;
}

async function targetOf(args: ReturnType<typeof parseArgs>): Promise<Target> {
  const config = loadConfig();
  const running = await readRuntime(config);
  const api = stringFlag(args, 'api') ?? running?.api;
  const channel = stringFlag(args, 'channel') ?? config.channelUrl ?? running?.channel;
  if (!api || !channel)
    throw new UsageError('no stack: run `flashpay start --control` in this directory, or pass --api URL --channel URL');
  const signer = tokenSigner((await loadSecret(config.jwtSecret, config.dataDir, 'jwt')).secret, tokenOptions(config));
  // The order is read in its tenant (the README walkthrough's `acme` unless --tenant says otherwise).
  const tenant = stringFlag(args, 'tenant') ?? 'acme';
  return {
    api,
    channel,
    tenant,
    providers: config.providers,
    adminToken: await signer.sign({ tenantId: tenant, userId: 'trigger', scope: 'admin' }),
    controlToken: config.controlToken,
    // The stack's provider's timeout: a reply later than it is lost.
    payTimeoutMs: payTimeoutOf(config, config.providers.provider),
    notifyUrl: notifyUrlFor(config, api),
  };
}

async function act(what: Trigger, orderId: string, t: Target): Promise<unknown> {
  const control = (path: string, body?: unknown) => call(`${t.channel}${path}`, { token: t.controlToken, body });
  const order = await call(`${t.api}/v1/admin/orders/${encodeURIComponent(orderId)}`, { token: t.adminToken });
  // Issue 48: the fake channel speaks only for orders whose money is at it (the provider the pay
  // recorded, else the tenant's): anything it did to another provider's order would be a forgery.
  const provider = (order.payment?.provider as string | null | undefined) ?? providerOfTenant(t.providers, t.tenant);
  if (provider !== 'fake')
    throw new UsageError(
      `${orderId} pays through ${provider}, not the fake channel: trigger acts only on orders of the fake channel`,
    );
  const amount = order.amount as number;
  const lastOf = async (kind?: string) => {
    const sent = ((await control('/_control/notifications')) as Array<Record<string, unknown>>).filter(
      (n) => n.merchant_order === orderId && (kind === undefined || n.kind === kind),
    );
    const last = sent.at(-1);
    if (!last) throw new UsageError(`${orderId} has no ${kind ?? ''} notification at the provider yet`);
    return last;
  };
  switch (what) {
    case 'charged':
      return call(`${t.channel}/charge`, { body: { merchant_order: orderId, amount, notify_url: t.notifyUrl } });
    case 'declined':
      return control('/_control/faults', { op: 'charge', kind: 'DECLINE', merchant_order: orderId });
    case 'lost-reply':
      return control('/_control/faults', {
        op: 'charge',
        kind: 'DELAY_RESPONSE',
        merchant_order: orderId,
        ms: t.payTimeoutMs + LOST_REPLY_EXTRA_MS,
      });
    case 'refunded':
      return call(`${t.channel}/refund`, {
        body: { merchant_order: orderId, refund_key: `trigger-${orderId}`, amount },
      });
    case 'duplicate-callback': {
      const last = await lastOf();
      return control('/_control/callbacks/send', {
        merchant_order: orderId,
        kind: last.kind,
        amount: last.amount,
        txn: last.txn,
        notify_url: last.notify_url,
        notify_id: last.notify_id,
      });
    }
    case 'late-callback': {
      const charge = await lastOf('CHARGED');
      return control('/_control/callbacks/send', {
        merchant_order: orderId,
        kind: 'CHARGED',
        amount: charge.amount,
        txn: charge.txn,
        notify_url: charge.notify_url,
      });
    }
  }
}

/** `flashpay trigger WHAT --order ID [--tenant acme] [--api URL --channel URL] [--json]` */
export async function triggerCommand(argv: string[]): Promise<void> {
  const args = parseArgs(argv, ['json']);
  refuseUnknownFlags('trigger', { ...args, positional: args.positional.slice(1) }, [
    'order',
    'tenant',
    'api',
    'channel',
    'json',
  ]);
  const what = args.positional[0];
  const orderId = stringFlag(args, 'order');
  if (!what || !(what in TRIGGERS) || !orderId)
    throw new UsageError(
      `usage: flashpay trigger ${Object.keys(TRIGGERS).join('|')} --order ID${what && !(what in TRIGGERS) ? ` (unknown "${what}")` : ''}`,
    );
  let result: unknown;
  try {
    result = await act(what as Trigger, orderId, await targetOf(args));
  } catch (error) {
    if (error instanceof UsageError) throw error;
    // A refusal of the API or the channel (no such order, no control API, a wrong token): one line.
    process.stderr.write(`flashpay trigger: ${(error as Error).message}\n`);
    process.exitCode = 1;
    return;
  }
  const done = { trigger: what, order_id: orderId, what: TRIGGERS[what as Trigger], provider: result };
  process.stdout.write(args.flags.has('json') ? `${JSON.stringify(done)}\n` : `${what} ${orderId}: ${done.what}\n`);
}
