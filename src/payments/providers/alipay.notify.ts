import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { AppDeps } from '../../app.deps.ts';
import { AppError } from '../../platform/errors.ts';
import { problemAnswers } from '../../platform/openapi.ts';
import { payTimeoutOf, providersInUse } from '../../platform/provider.config.ts';
import { handleNotification, parseNotification } from '../notifications.ts';
import type { NotificationRecord } from '../payments.repo.ts';
import type { PaymentDeps } from '../payments.deps.ts';
import { minorFromDecimal } from '../../platform/money.ts';
import { alipaySdk } from './alipay.ts';
import { WEBHOOK_PATHS } from './webhook-paths.ts';

// Alipay's async notify (issue 37): a form POST to the notify_url given with alipay.trade.pay,
// signed with Alipay's key (sorted k=v without sign and sign_type). Verified first, then put in
// the fake channel's words and handed to handleNotification: deduplicated by notify_id, applied
// through the decider. Alipay retries until it reads the plain text `success`.

/** The only answer Alipay takes as "received"; anything else and it notifies again. */
const RECEIVED = 'success';

const AlipayNotifyBody = Type.Object(
  {
    notify_id: Type.String({ description: 'the notification id: one effect per id' }),
    notify_time: Type.String(),
    notify_type: Type.String({ examples: ['trade_status_sync'] }),
    app_id: Type.String(),
    out_trade_no: Type.String({ description: "flashpay's order id" }),
    trade_no: Type.String({ description: "Alipay's trade number" }),
    trade_status: Type.String({ examples: ['TRADE_SUCCESS', 'TRADE_FINISHED', 'TRADE_CLOSED', 'WAIT_BUYER_PAY'] }),
    total_amount: Type.String({ description: 'yuan, two decimals', examples: ['19.90'] }),
    refund_fee: Type.Optional(Type.String({ description: 'present on a refund' })),
    gmt_refund: Type.Optional(Type.String({ description: 'present on a refund' })),
    sign_type: Type.String({ examples: ['RSA2'] }),
    sign: Type.String({ description: "RSA2 signature with Alipay's key" }),
  },
  {
    additionalProperties: true,
    examples: [
      {
        notify_id: '2026120600222103412345678901234567',
        notify_time: '2026-12-06 10:34:12',
        notify_type: 'trade_status_sync',
        app_id: '2021000000000000',
        out_trade_no: 'ord_744f166d40ac3985bc9c',
        trade_no: '2026120622001412345678901234',
        trade_status: 'TRADE_SUCCESS',
        total_amount: '19.90',
        sign_type: 'RSA2',
        sign: 'base64 RSA2 signature…',
      },
    ],
  },
);

export const alipayNotifySchema = {
  operationId: 'receiveAlipayNotify',
  summary: 'Alipay async notify (Alipay → service)',
  description:
    "Alipay's trade_status_sync notify, `application/x-www-form-urlencoded`, verified with Alipay's public key (ALIPAY_PUBLIC_KEY): a bad signature is 400 `BAD_SIGNATURE` and nothing is recorded. TRADE_SUCCESS / TRADE_FINISHED is a charge, a notify with refund_fee / gmt_refund a refund, TRADE_CLOSED without one a pay that will not take money. Answered with the plain text `success` once recorded (a duplicate too). 404 `PROVIDER_NOT_CONFIGURED` when no tenant pays through Alipay. A notify for an order whose payment is not at Alipay (`WRONG_PROVIDER`) or whose trade_no settled another order (`PAYMENT_ID_IN_USE`) is answered `success` too, recorded with that effect and a note for a person, the order unchanged.",
  tags: ['provider'],
  consumes: ['application/x-www-form-urlencoded'],
  docBody: AlipayNotifyBody,
  response: {
    200: {
      description: 'Recorded (or a duplicate, or a status that changes nothing): Alipay stops notifying',
      content: { 'text/plain': { schema: Type.String({ examples: [RECEIVED] }) } },
    },
    ...problemAnswers(['BAD_SIGNATURE', 'VALIDATION', 'PAYLOAD_TOO_LARGE', 'PROVIDER_NOT_CONFIGURED']),
  },
};

/** The notify as flashpay's notification; undefined for a status that moves no money yet (WAIT_BUYER_PAY). */
function notificationOf(params: Record<string, string>): NotificationRecord | undefined {
  const refunded = params.refund_fee !== undefined || params.gmt_refund !== undefined;
  const status = params.trade_status;
  const kind = refunded
    ? 'REFUNDED'
    : status === 'TRADE_SUCCESS' || status === 'TRADE_FINISHED'
      ? 'CHARGED'
      : status === 'TRADE_CLOSED'
        ? 'DECLINED' // closed unpaid: the money will not move, as a decline
        : undefined;
  if (!kind) return undefined;
  const amount = minorFromDecimal(refunded ? (params.refund_fee ?? params.total_amount) : params.total_amount);
  if (amount === undefined)
    throw new AppError('VALIDATION', 'total_amount / refund_fee must be yuan with at most two decimals');
  return parseNotification(
    {
      notify_id: params.notify_id,
      merchant_order: params.out_trade_no,
      kind,
      amount,
      txn: params.trade_no,
    },
    'alipay',
  );
}

export function alipayNotifyRoutes(app: FastifyInstance, deps: AppDeps, payments: PaymentDeps): void {
  const { providers } = deps.config;
  const payTimeoutMs = payTimeoutOf(deps.config, 'alipay');
  // Built once when some tenant pays through Alipay; the SDK holds Alipay's public key for checkNotifySign.
  const sdk = providersInUse(providers).includes('alipay') ? alipaySdk(providers.alipay, payTimeoutMs) : undefined;
  // An encapsulated scope: the form parser belongs to this route and to no other.
  void app.register(async (scope) => {
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (request, body, done) => {
      request.rawBody = String(body);
      done(null, Object.fromEntries(new URLSearchParams(String(body))));
    });
    scope.post(WEBHOOK_PATHS.alipay, { schema: alipayNotifySchema }, async (request, reply) => {
      if (!sdk) throw new AppError('PROVIDER_NOT_CONFIGURED', 'no tenant pays through alipay here');
      const params = (typeof request.body === 'object' && request.body !== null ? request.body : {}) as Record<
        string,
        string
      >;
      // The form is already decoded: V2 signs the values as they are, without a second decode.
      if (!(await sdk).checkNotifySignV2(params))
        throw new AppError('BAD_SIGNATURE', 'the notify does not carry a valid Alipay signature');
      if (providers.alipay.appId !== undefined && params.app_id !== providers.alipay.appId)
        throw new AppError('VALIDATION', 'app_id is not this app');
      const record = notificationOf(params);
      if (record) await handleNotification(payments, record);
      return reply.code(200).type('text/plain; charset=utf-8').send(RECEIVED);
    });
  });
}
