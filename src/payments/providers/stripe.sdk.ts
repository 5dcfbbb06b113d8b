import type Stripe from 'stripe';

// The Stripe SDK is loaded when a Stripe call or webhook first needs it, not at boot: it is about
// 250 files and 135 ms of CPU, paid by every process whose tenants never pay through Stripe (most
// of the test suite's hundreds of servers, issue 49). Alipay's SDK is loaded the same way.

let loaded: typeof Stripe | undefined;

export async function loadStripe(): Promise<typeof Stripe> {
  loaded ??= (await import('stripe')).default;
  return loaded;
}

/** Stripe's error classes once the SDK is loaded; before that no error can be one of them. */
export function stripeErrors(): typeof Stripe.errors | undefined {
  return loaded?.errors;
}
