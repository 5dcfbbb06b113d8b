import {
  decideCharge,
  decideRefund,
  RefundKeyConflict,
  type ChargeRecord,
  closedRecord,
  type Decision,
  type LedgerStore,
  type Outcome,
} from '../ledger.ts';
import { decimalFromMinor, minorFromDecimal } from '../../platform/money.ts';

// The ledger's decisions in Alipay's words: each trade method decides with the fake channel's rules
// under the order's lock, then its answer is rewritten as Alipay's response node. The node is
// signed by the dialect (alipay.ts) once the fault book had its say.

export type Biz = Record<string, unknown>;
/** An Alipay response node: `code` 10000 is success, 40004 a business failure with `sub_code`. */
export type Node = Record<string, unknown>;

const OK = { code: '10000', msg: 'Success' };
const failed = (subCode: string, subMsg: string, extra: Node = {}): Node => ({
  code: '40004',
  msg: 'Business Failed',
  sub_code: subCode,
  sub_msg: subMsg,
  ...extra,
});

/** Alipay's largest total_amount: 100,000,000.00 CNY, in fen. */
const MAX_TOTAL_FEN = 10_000_000_000;

/** A buyer's auth code the double reads as "the buyer must confirm on their phone" (10003). */
const WAIT_BUYER_PAY_AUTH_CODE = 'WAIT_BUYER_PAY';
/** A buyer's auth code the double refuses as invalid (a declined pay). */
const INVALID_AUTH_CODE = 'INVALID';

/** A pay waiting for the buyer: no money moved, nothing in the ledger yet (Alipay's WAIT_BUYER_PAY). */
export interface WaitingTrade {
  amount: number;
  notifyUrl: string;
}

const text = (biz: Biz, field: string) => (typeof biz[field] === 'string' ? (biz[field] as string) : '');

function asNode(outcome: Outcome, node: Node): Outcome {
  return { ...outcome, httpStatus: 200, body: node };
}

function tradeNode(record: ChargeRecord, extra: Node = {}): Node {
  return {
    out_trade_no: record.merchantOrder,
    trade_no: record.txn,
    total_amount: record.amount === null ? undefined : decimalFromMinor(record.amount),
    ...extra,
  };
}

interface PayRequest {
  biz: Biz;
  notifyUrl: string;
  decline: boolean;
  /** The buyer was told to confirm on their phone (the auth code, or the double's buyer.wait). */
  waitForBuyer: boolean;
}

/** `alipay.trade.pay`: idempotent by out_trade_no like the ledger's charge. */
export async function pay(
  store: LedgerStore,
  request: PayRequest,
  waiting: Map<string, WaitingTrade>,
): Promise<Outcome> {
  const mo = text(request.biz, 'out_trade_no');
  const amount = minorFromDecimal(request.biz.total_amount);
  if (!mo || amount === undefined || amount <= 0)
    return {
      httpStatus: 200,
      body: failed('ACQ.INVALID_PARAMETER', 'out_trade_no and total_amount (yuan, 2 decimals) are required'),
    };
  // As Alipay: refused before any trade exists, so no money can move under this out_trade_no.
  if (amount > MAX_TOTAL_FEN)
    return {
      httpStatus: 200,
      body: failed('ACQ.TOTAL_FEE_EXCEED', 'total_amount is more than the limit', { out_trade_no: mo }),
    };
  const authCode = text(request.biz, 'auth_code');
  return store.withOrder(mo, async (view): Promise<Decision> => {
    if (!view.current && (request.waitForBuyer || authCode === WAIT_BUYER_PAY_AUTH_CODE))
      waiting.set(mo, { amount, notifyUrl: request.notifyUrl });
    // A trade waiting for its buyer answers 10003 to every pay: only the buyer's confirmation moves money.
    const trade = view.current ? undefined : waiting.get(mo);
    if (trade) {
      const node = {
        code: '10003',
        msg: 'order success pay inprocess',
        out_trade_no: mo,
        total_amount: decimalFromMinor(trade.amount),
      };
      return { outcome: { httpStatus: 200, body: node } };
    }
    const decline = request.decline || authCode === INVALID_AUTH_CODE;
    const decided = decideCharge(view, { merchantOrder: mo, amount, notifyUrl: request.notifyUrl, decline });
    const record = decided.write?.record ?? view.current;
    let node: Node;
    if (decided.outcome.httpStatus === 409)
      node = failed('ACQ.TRADE_HAS_CLOSE', 'the trade is closed', { out_trade_no: mo });
    else if (decided.outcome.httpStatus === 422)
      node = failed('ACQ.INVALID_PARAMETER', 'total_amount differs from the trade', { out_trade_no: mo });
    else if (record?.status === 'DECLINED')
      node = failed('ACQ.PAYMENT_AUTH_CODE_INVALID', 'the buyer auth code is not valid', tradeNode(record));
    else node = { ...OK, ...tradeNode(record!), gmt_payment: new Date().toISOString() };
    return { ...decided, outcome: asNode(decided.outcome, node) };
  });
}

/** The buyer confirms a waiting pay: the charge lands in the ledger and Alipay notifies TRADE_SUCCESS. */
export async function confirm(store: LedgerStore, mo: string, waiting: Map<string, WaitingTrade>): Promise<Outcome> {
  const trade = waiting.get(mo);
  if (!trade) return { httpStatus: 200, body: failed('ACQ.TRADE_NOT_EXIST', 'no trade waits for the buyer') };
  waiting.delete(mo);
  return store.withOrder(mo, async (view) => {
    const decided = decideCharge(view, {
      merchantOrder: mo,
      amount: trade.amount,
      notifyUrl: trade.notifyUrl,
      decline: false,
    });
    return { ...decided, outcome: asNode(decided.outcome, { ...OK, out_trade_no: mo }) };
  });
}

/** `alipay.trade.query`: the trade's status; a fully refunded trade is TRADE_CLOSED, as at Alipay. */
export async function query(store: LedgerStore, mo: string, waiting: Map<string, WaitingTrade>): Promise<Outcome> {
  return store.withOrder(mo, async (view) => {
    const record = view.current;
    const trade = waiting.get(mo);
    let node: Node;
    if (!record && trade)
      node = { ...OK, out_trade_no: mo, trade_status: 'WAIT_BUYER_PAY', total_amount: decimalFromMinor(trade.amount) };
    else if (!record) node = failed('ACQ.TRADE_NOT_EXIST', 'the trade does not exist', { out_trade_no: mo });
    else {
      const status = record.status === 'CHARGED' ? 'TRADE_SUCCESS' : 'TRADE_CLOSED';
      node = { ...OK, ...tradeNode(record), trade_status: status };
    }
    return { outcome: { httpStatus: 200, body: node } };
  });
}

/**
 * `alipay.trade.close`: closes an unpaid trade. A trade Alipay never saw is ACQ.TRADE_NOT_EXIST and
 * leaves nothing behind, so a pay still on its way can land later (unlike the fake channel's close).
 */
export async function close(store: LedgerStore, mo: string, waiting: Map<string, WaitingTrade>): Promise<Outcome> {
  return store.withOrder(mo, async (view): Promise<Decision> => {
    const current = view.current;
    if (!current && waiting.delete(mo)) {
      const record = closedRecord(mo);
      return { outcome: { httpStatus: 200, body: { ...OK, out_trade_no: mo } }, write: { record } };
    }
    if (!current)
      return {
        outcome: {
          httpStatus: 200,
          body: failed('ACQ.TRADE_NOT_EXIST', 'the trade does not exist', { out_trade_no: mo }),
        },
      };
    if (current.status === 'CHARGED' || current.status === 'REFUNDED')
      return {
        outcome: {
          httpStatus: 200,
          body: failed('ACQ.TRADE_STATUS_ERROR', 'a paid trade cannot be closed', tradeNode(current)),
        },
      };
    return { outcome: { httpStatus: 200, body: { ...OK, out_trade_no: mo, trade_no: current.txn ?? undefined } } };
  });
}

/** `alipay.trade.refund`: full refunds, idempotent by out_request_no (the ledger's refund key). */
export async function refund(store: LedgerStore, biz: Biz): Promise<Outcome> {
  const mo = text(biz, 'out_trade_no');
  const key = text(biz, 'out_request_no');
  const amount = minorFromDecimal(biz.refund_amount);
  if (!mo || !key || amount === undefined)
    return {
      httpStatus: 200,
      body: failed('ACQ.INVALID_PARAMETER', 'out_trade_no, out_request_no and refund_amount are required'),
    };
  try {
    return await store.withOrder(mo, async (view) => {
      const decided = await decideRefund(view, { merchantOrder: mo, refundKey: key, amount });
      const record = decided.write?.record ?? view.current;
      const status = decided.outcome.httpStatus;
      let node: Node;
      if (status === 200 && record)
        node = {
          ...OK,
          ...tradeNode(record),
          refund_fee: decimalFromMinor(amount),
          fund_change: decided.write ? 'Y' : 'N',
          out_request_no: key,
        };
      else if (!view.current) node = failed('ACQ.TRADE_NOT_EXIST', 'the trade does not exist');
      else if (view.current.status !== 'CHARGED' && view.current.status !== 'REFUNDED')
        node = failed('ACQ.TRADE_STATUS_ERROR', 'the trade was not paid');
      else if (status === 422 && decided.outcome.body.code === 'AMOUNT_MISMATCH')
        node = failed('ACQ.REFUND_AMT_NOT_EQUAL_TOTAL', 'full refunds only');
      else if (decided.outcome.body.code === 'REFUND_KEY_REUSED')
        node = failed('ACQ.INVALID_PARAMETER', 'out_request_no was used for another trade');
      else node = failed('ACQ.TRADE_HAS_FINISHED', 'the trade was already refunded under another out_request_no');
      return { ...decided, outcome: asNode(decided.outcome, node) };
    });
  } catch (error) {
    if (!(error instanceof RefundKeyConflict)) throw error;
    return { httpStatus: 200, body: failed('ACQ.INVALID_PARAMETER', 'out_request_no was used for another trade') };
  }
}

/** `alipay.trade.fastpay.refund.query`: the refund under out_request_no, if any (10000 with no refund_status when none). */
export async function refundQuery(store: LedgerStore, biz: Biz): Promise<Outcome> {
  const mo = text(biz, 'out_trade_no');
  const key = text(biz, 'out_request_no');
  return store.withOrder(mo, async (view) => {
    const record = view.current;
    const node: Node =
      record?.status === 'REFUNDED' && record.refundKey === key && record.amount !== null
        ? {
            ...OK,
            ...tradeNode(record),
            out_request_no: key,
            refund_amount: decimalFromMinor(record.amount),
            refund_status: 'REFUND_SUCCESS',
          }
        : { ...OK, out_trade_no: mo, out_request_no: key };
    return { outcome: { httpStatus: 200, body: node } };
  });
}
