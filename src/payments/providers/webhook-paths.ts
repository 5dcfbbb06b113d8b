// Where each real provider notifies flashpay (webhooks.ts registers the routes): a leaf, so the
// adapters, their routes and the development doubles name one path each.
export const WEBHOOK_PATHS = {
  stripe: '/v1/providers/stripe/webhook',
  alipay: '/v1/providers/alipay/notify',
} as const;

/** The path of flashpay's own notification route for the fake channel (notifyUrlFor). */
const CHANNEL_NOTIFY_PATH = '/v1/payment-notifications';

/**
 * A provider's webhook URL under the same public base as `notifyUrl` (notifyUrlFor's), which may
 * carry a path of its own (FLASHPAY_PUBLIC_URL=https://shop.example/flashpay): only the
 * notification route's own path is swapped, never the base's.
 */
export function webhookUrl(notifyUrl: string, provider: keyof typeof WEBHOOK_PATHS): string {
  if (!notifyUrl.endsWith(CHANNEL_NOTIFY_PATH)) throw new Error(`notify URL ${notifyUrl} is not flashpay's`);
  return notifyUrl.slice(0, -CHANNEL_NOTIFY_PATH.length) + WEBHOOK_PATHS[provider];
}
