// Money is integer minor units. The largest amount one order may have is the largest the
// configured payment provider accepts for one charge: the fake channel (src/channel) refuses more
// than 10^12 minor units, as providers have a ceiling per charge. It is below 2^53, so every
// amount that passes is an exact JavaScript number; sums are computed in bigint before the check,
// so a total past 2^53 is refused, never rounded. The database holds the same bound
// (orders_amount_within_provider_limit, migration 152).

/** The largest order total, in minor units, that the configured provider accepts (fake channel: 10^12). */
export const MAX_ORDER_AMOUNT_MINOR = 1_000_000_000_000;

/** The exact total of these lines (unit price × quantity each, summed in bigint). */
export function exactTotal(lines: readonly { unitPrice: number; quantity: number }[]): bigint {
  let total = 0n;
  for (const line of lines) total += BigInt(line.unitPrice) * BigInt(line.quantity);
  return total;
}

/**
 * Whether an order of this total can be charged: at most `maximum` (the tenant's provider's, in its
 * currency: maxOrderAmountOf in provider.config.ts), never more than MAX_ORDER_AMOUNT_MINOR.
 */
export function isChargeableTotal(total: bigint, maximum: number = MAX_ORDER_AMOUNT_MINOR): boolean {
  return total >= 0n && total <= BigInt(Math.min(maximum, MAX_ORDER_AMOUNT_MINOR));
}

/** A bigint total known to be chargeable, as the number the rest of the code carries. */
export function toAmount(total: bigint): number {
  if (!isChargeableTotal(total)) throw new Error(`amount ${total} is past the provider's limit`);
  return Number(total);
}

/** Integer minor units as a two-decimal string, exactly (Alipay's yuan): 1990 → "19.90", -5 → "-0.05". */
export function decimalFromMinor(minor: number): string {
  const sign = minor < 0 ? '-' : '';
  const abs = Math.abs(minor);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

/** A two-decimal string as integer minor units, exactly ("19.9", "19.90", "-1.00"); undefined when it is not one. */
export function minorFromDecimal(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const match = /^(-?)(\d{1,12})(?:\.(\d{1,2}))?$/.exec(value.trim());
  if (!match) return undefined;
  const [, sign, whole = '0', fraction = ''] = match;
  const minor = Number(whole) * 100 + Number(fraction.padEnd(2, '0'));
  return sign === '-' ? -minor : minor;
}
