import { providerOfTenant } from '../platform/provider.config.ts';
import { UsageError } from '../platform/args.ts';
import type { Trigger } from './specs/index.ts';
import { call, type Target } from './trigger.target.ts';

// Longer than any pay timeout flashpay runs with, so the caller gives up before the reply comes.
const LOST_REPLY_EXTRA_MS = 2_000;

/** Makes one provider-side thing happen to an order through the fake channel's control API. */
export async function act(what: Trigger, orderId: string, t: Target): Promise<unknown> {
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
