import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Dialect, OutgoingNotification, WireNotification } from '../dialect.ts';
import { assertHttpUrl, perform, type ChannelDeps } from '../channel.routes.ts';
import type { Outcome } from '../ledger.ts';
import { decimalFromMinor } from '../../platform/money.ts';
import { billCsv, signedAnswer, signNotify, verifyRequest, zipOne } from './alipay.wire.ts';
import { close, confirm, pay, query, refund, refundQuery, type Biz, type WaitingTrade } from './alipay.trades.ts';

// The Alipay double (issue 37): the fake channel's ledger, fault book and notifier speaking Alipay's
// OpenAPI 2.0 gateway. alipay-sdk 4.14.0 POSTs to /gateway.do with the common parameters (app_id,
// method, format, charset, sign_type, sign, timestamp, version, notify_url) in the query string and
// biz_content as an application/x-www-form-urlencoded body; both are read here, as Alipay does.
// Answers are signed with the double's own key (Alipay's), so the SDK's verification passes.

interface AlipayDialectOptions {
  /** "Alipay's" private key: signs every answer and notify. */
  platformPrivateKey: string;
  /** The app's public key: when given, every request's signature is checked with it. */
  appPublicKey?: string;
  /** When given, a request for another app_id is refused. */
  appId?: string;
}

/**
 * A double-only method: the buyer confirms a pay that waits for them (10003 / WAIT_BUYER_PAY) — what
 * the buyer's phone does at Alipay. Signed like every request, so only the app's key holder can.
 */
export const BUYER_CONFIRM_METHOD = 'flashpay.double.buyer.confirm';
/** A double-only method: the next pay of this out_trade_no waits for its buyer (answers 10003). */
export const BUYER_WAIT_METHOD = 'flashpay.double.buyer.wait';

const BILL_PATH = '/_alipay/bill';
/**
 * How many bill URLs the double keeps, the most recent: every download asks for a fresh URL, so a
 * long-running double would otherwise keep every token it ever handed out. An older URL answers
 * 404, as an expired one does at Alipay.
 */
const MAX_BILLS = 64;

const systemError = (message: string) => ({
  code: '20000',
  msg: 'Service Currently Unavailable',
  sub_code: 'isp.unknow-error',
  sub_msg: message,
});

/** Alipay writes times as `yyyy-MM-dd HH:mm:ss` in China time. */
export function alipayTime(at = new Date()): string {
  return new Date(at.getTime() + 8 * 3_600_000).toISOString().slice(0, 19).replace('T', ' ');
}

function paramsOf(request: FastifyRequest): Record<string, string> {
  const params: Record<string, string> = {};
  const merge = (source: unknown) => {
    if (typeof source !== 'object' || source === null) return;
    for (const [key, value] of Object.entries(source as Record<string, unknown>))
      if (typeof value === 'string') params[key] = value;
  };
  merge(request.query);
  merge(request.body);
  return params;
}

function bizOf(params: Record<string, string>): Biz {
  try {
    const parsed = JSON.parse(params.biz_content ?? '{}') as unknown;
    return typeof parsed === 'object' && parsed !== null ? (parsed as Biz) : {};
  } catch {
    return {};
  }
}

export function alipayDialect(options: AlipayDialectOptions): Dialect {
  const { platformPrivateKey } = options;
  /** Pays waiting for their buyer; they hold no money, so the double keeps them in memory only. */
  const waiting = new Map<string, WaitingTrade>();
  /** Bill tokens handed out by downloadurl.query: a bill is served only under a URL the double gave. */
  const bills = new Map<string, string>();
  /** Trades whose next pay waits for the buyer (BUYER_WAIT_METHOD). */
  const mustWait = new Set<string>();

  function answer(reply: FastifyReply, method: string, outcome: Outcome): FastifyReply {
    return reply
      .code(200)
      .type('application/json; charset=utf-8')
      .send(signedAnswer(method, outcome.body, platformPrivateKey));
  }

  /** Runs a trade method through `perform`, so faults and counts apply; the answer is signed after. */
  function performed(
    deps: ChannelDeps,
    request: FastifyRequest,
    reply: FastifyReply,
    method: string,
    op: 'charge' | 'query' | 'close' | 'refund',
    mo: string,
    act: (decline: boolean) => Promise<Outcome>,
  ) {
    return perform(deps, request, reply, op, mo, async (hits) => {
      const outcome = await act(hits.DECLINE !== undefined);
      // perform sends `body` as JSON; the signed text must be exactly what the SDK verifies.
      return {
        ...outcome,
        httpStatus: 200,
        body: JSON.parse(signedAnswer(method, outcome.body, platformPrivateKey)) as Record<string, unknown>,
      };
    });
  }

  function register(app: FastifyInstance, deps: ChannelDeps): void {
    deps.errorBody = (message) => ({ error_response: systemError(message) });
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(String(body))));
    });

    app.post('/gateway.do', async (request, reply) => {
      const params = paramsOf(request);
      const method = params.method ?? '';
      const refuse = (subCode: string, subMsg: string) =>
        answer(reply, method || 'error', {
          httpStatus: 200,
          body: { code: '40002', msg: 'Invalid Arguments', sub_code: subCode, sub_msg: subMsg },
        });
      if (options.appPublicKey && !verifyRequest(params, options.appPublicKey))
        return refuse('isv.invalid-signature', 'the request signature does not verify');
      if (options.appId && params.app_id !== options.appId) return refuse('isv.invalid-app-id', 'unknown app_id');
      const biz = bizOf(params);
      const mo = typeof biz.out_trade_no === 'string' ? biz.out_trade_no : '';
      const { store } = deps;
      switch (method) {
        case 'alipay.trade.pay': {
          const notifyUrl = params.notify_url ?? '';
          assertHttpUrl(notifyUrl, 'notify_url', deps.notifyHosts);
          return performed(deps, request, reply, method, 'charge', mo, (decline) =>
            pay(store, { biz, notifyUrl, decline, waitForBuyer: mustWait.delete(mo) }, waiting),
          );
        }
        case 'alipay.trade.query':
          return performed(deps, request, reply, method, 'query', mo, () => query(store, mo, waiting));
        case 'alipay.trade.close':
          return performed(deps, request, reply, method, 'close', mo, () => close(store, mo, waiting));
        case 'alipay.trade.refund':
          return performed(deps, request, reply, method, 'refund', mo, () => refund(store, biz));
        case 'alipay.trade.fastpay.refund.query':
          // A read beside the trade query: not counted nor faulted, so one query() counts once, as on the fake channel.
          return answer(reply, method, await refundQuery(store, biz));
        case BUYER_CONFIRM_METHOD: {
          const outcome = await confirm(store, mo, waiting);
          if (outcome.notify) deps.notifier.enqueue(outcome.notify);
          return answer(reply, method, outcome);
        }
        case BUYER_WAIT_METHOD:
          mustWait.add(mo);
          return answer(reply, method, { httpStatus: 200, body: { code: '10000', msg: 'Success', out_trade_no: mo } });
        case 'alipay.data.dataservice.bill.downloadurl.query': {
          const token = randomBytes(12).toString('hex');
          const billDate = typeof biz.bill_date === 'string' ? biz.bill_date : alipayTime().slice(0, 10);
          bills.set(token, billDate);
          if (bills.size > MAX_BILLS) bills.delete(bills.keys().next().value!);
          const url = `http://${request.headers.host ?? '127.0.0.1'}${BILL_PATH}/${token}`;
          return answer(reply, method, {
            httpStatus: 200,
            body: { code: '10000', msg: 'Success', bill_download_url: url },
          });
        }
        default:
          return refuse('isv.invalid-method', `unknown method ${method}`);
      }
    });

    // The bill: every line of the ledger whatever the date asked (a real bill is one day's; the
    // double's day is its whole run), one CSV in a zip as Alipay serves it.
    app.get(`${BILL_PATH}/:token`, async (request, reply) => {
      const billDate = bills.get((request.params as { token: string }).token);
      if (!billDate) return reply.code(404).type('text/plain').send('no such bill');
      const csv = billCsv(await deps.store.statement(), billDate);
      const name = `${billDate.replaceAll('-', '')}_业务明细.csv`;
      return reply
        .code(200)
        .type('application/zip')
        .send(zipOne(name, Buffer.from(csv, 'utf8')));
    });
  }

  function notification(n: OutgoingNotification): WireNotification {
    const params: Record<string, string> = {
      notify_time: alipayTime(),
      notify_type: 'trade_status_sync',
      notify_id: n.notifyId,
      app_id: options.appId ?? 'flashpay-double',
      charset: 'utf-8',
      version: '1.0',
      sign_type: 'RSA2',
      trade_no: n.txn,
      out_trade_no: n.merchantOrder,
      total_amount: decimalFromMinor(n.amount),
    };
    if (n.kind === 'CHARGED') {
      params.trade_status = 'TRADE_SUCCESS';
      params.receipt_amount = decimalFromMinor(n.amount);
      params.gmt_payment = params.notify_time!;
    } else if (n.kind === 'REFUNDED') {
      // A full refund closes the trade; the refund is told by refund_fee and gmt_refund.
      params.trade_status = 'TRADE_CLOSED';
      params.refund_fee = decimalFromMinor(n.amount);
      params.gmt_refund = params.notify_time!;
    } else {
      params.trade_status = 'TRADE_CLOSED';
    }
    params.sign = signNotify(params, platformPrivateKey);
    const body = new URLSearchParams(params).toString();
    return { body, headers: () => ({ 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' }) };
  }

  function reset(): void {
    waiting.clear();
    mustWait.clear();
    bills.clear();
  }

  return { name: 'alipay', register, notification, reset };
}
