// The channel is a separate product (a provider double), so its business refusals have their own
// closed set of codes, documented in docs/channel.md, rather than widening the service's
// ERROR_STATUS. Bodies are RFC 9457 problem documents like every other flashpay error.
const TITLES = {
  CLOSED: 'The merchant order is closed',
  AMOUNT_MISMATCH: 'The amount does not match the charge',
  NOT_CHARGED: 'Nothing was charged for this merchant order',
  ALREADY_REFUNDED: 'The charge was already refunded',
  REFUND_KEY_REUSED: 'The refund key was used for another merchant order',
} as const;

export type ChannelCode = keyof typeof TITLES;

const STATUS: Record<ChannelCode, number> = {
  CLOSED: 409,
  AMOUNT_MISMATCH: 422,
  NOT_CHARGED: 409,
  ALREADY_REFUNDED: 409,
  REFUND_KEY_REUSED: 422,
};

export function channelProblem(
  code: ChannelCode,
  detail: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  // Extra members never shadow the RFC 9457 ones (as in platform/errors.ts problem()).
  return {
    ...extra,
    type: `https://flashpay.dev/errors/channel/${code.toLowerCase().replace(/_/g, '-')}`,
    title: TITLES[code],
    status: STATUS[code],
    code,
    detail,
  };
}
