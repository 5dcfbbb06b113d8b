import { describe, expect, it } from 'vitest';
import { notifyUrlFor } from '../../src/platform/config.ts';
import { webhookUrl } from '../../src/payments/providers/webhook-paths.ts';

// Alipay's notify_url and the development doubles' registered webhooks are built from flashpay's
// notify URL (notifyUrlFor). A public URL with a path (flashpay behind a proxy under /flashpay)
// used to lose that path: new URL('/v1/providers/alipay/notify', base) replaces the whole path.
describe('provider webhook URLs under FLASHPAY_PUBLIC_URL', () => {
  it('WP-01 keep the public URL’s path; only the notification route is swapped', () => {
    const behindProxy = notifyUrlFor({ publicUrl: 'https://shop.example/flashpay' }, 'http://127.0.0.1:3000');
    expect(webhookUrl(behindProxy, 'alipay')).toBe('https://shop.example/flashpay/v1/providers/alipay/notify');
    expect(webhookUrl(behindProxy, 'stripe')).toBe('https://shop.example/flashpay/v1/providers/stripe/webhook');
    const own = notifyUrlFor({ publicUrl: undefined }, 'http://127.0.0.1:3000');
    expect(webhookUrl(own, 'alipay')).toBe('http://127.0.0.1:3000/v1/providers/alipay/notify');
    expect(() => webhookUrl('https://elsewhere.example/hook', 'alipay')).toThrow(/not flashpay's/);
  });
});
