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

/** Whether an order of this total can be charged: at most MAX_ORDER_AMOUNT_MINOR. */
export function isChargeableTotal(total: bigint): boolean {
  return total >= 0n && total <= BigInt(MAX_ORDER_AMOUNT_MINOR);
}

/** A bigint total known to be chargeable, as the number the rest of the code carries. */
export function toAmount(total: bigint): number {
  if (!isChargeableTotal(total)) throw new Error(`amount ${total} is past the provider's limit`);
  return Number(total);
}
