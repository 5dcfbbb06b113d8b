import { invariant } from '../platform/errors.ts';
import { randomHex } from '../platform/ids.ts';
import { channelProblem, type ChannelCode } from './problems.ts';
import type { FulfilmentStore } from './fulfilments.ts';

// The ledger's model and its rules. The rules are pure decisions over the current record of one
// merchant order; a LedgerStore runs them under that order's lock and applies the write they ask
// for atomically, before anyone is answered.

export const CHARGE_STATUSES = ['CHARGED', 'DECLINED', 'CLOSED', 'REFUNDED'] as const;
export type ChargeStatus = (typeof CHARGE_STATUSES)[number];
export type NotifyKind = 'CHARGED' | 'DECLINED' | 'REFUNDED';
export type LineType = 'CHARGE' | 'REFUND';

/** One row per merchant order. A CLOSED row has no amount, txn or notify_url. */
export interface ChargeRecord {
  merchantOrder: string;
  status: ChargeStatus;
  amount: number | null;
  txn: string | null;
  notifyUrl: string | null;
  refundKey: string | null;
  refundId: string | null;
}

export interface LineDraft {
  type: LineType;
  merchantOrder: string;
  amount: number;
  ref: string;
}

export interface StatementLine extends LineDraft {
  at: string;
  /** Its place in the ledger: increasing in the order lines became visible (the statement cursor). */
  seq: number;
}

/** A page of the statement: the lines after `after` (a seq), at most `limit` of them. */
export interface StatementPage {
  after: number;
  limit: number;
}

/** What the HTTP layer sends back, and the notification the change calls for, if any. */
export interface Outcome {
  httpStatus: number;
  body: Record<string, unknown>;
  notify?: { kind: NotifyKind; merchantOrder: string; amount: number; txn: string; notifyUrl: string };
}

/**
 * What a charge or refund does to a customer account (seed 002), applied with the record's write:
 * a charge takes its amount from the customer's balance and remembers whom it was taken from; a
 * refund gives it back to them, once.
 */
export type AccountMove = { kind: 'DEBIT'; customer: string; amount: number } | { kind: 'GIVE_BACK' };

export interface Decision {
  outcome: Outcome;
  write?: { record: ChargeRecord; line?: LineDraft; account?: AccountMove };
}

/** The customer accounts beside the ledger (seed 002): set and read by the control API. */
export interface AccountBook {
  set(customer: string, balance: number): Promise<void>;
  get(customer: string): Promise<number | undefined>;
  clear(): Promise<void>;
}

export interface OrderView {
  current: ChargeRecord | undefined;
  /** The merchant order a refund key was already used on, if any (refund keys are global). */
  refundKeyOwner(refundKey: string): Promise<string | undefined>;
  /** A customer's balance as of this decision (seed 002); undefined: no account, no limit. */
  balanceOf(customer: string): Promise<number | undefined>;
}

export interface LedgerStore {
  /** Runs `decide` under the merchant order's lock; its write is committed before this resolves. */
  withOrder(merchantOrder: string, decide: (view: OrderView) => Promise<Decision>): Promise<Outcome>;
  statement(merchantOrder?: string, page?: StatementPage): Promise<StatementLine[]>;
  reset(): Promise<void>;
  /** Seed 002: where the fulfilment double keeps its records beside this ledger (memory when absent). */
  fulfilments?: FulfilmentStore;
  /** Seed 002: the customer accounts, kept where the ledger is (durable with the PostgreSQL one). */
  accounts: AccountBook;
}

/** Two refunds of different orders raced for one refund key; the loser is told so. */
export class RefundKeyConflict extends Error {}

export function newId(prefix: 'txn' | 're' | 'ntf'): string {
  return `${prefix}_${randomHex(12)}`;
}

/** A merchant order closed before any charge: nothing can be charged under it any more. */
export function closedRecord(merchantOrder: string): ChargeRecord {
  return {
    merchantOrder,
    status: 'CLOSED',
    amount: null,
    txn: null,
    notifyUrl: null,
    refundKey: null,
    refundId: null,
  };
}

export function describeCharge(merchantOrder: string, record: ChargeRecord | undefined): Record<string, unknown> {
  if (!record) return { merchant_order: merchantOrder, status: 'NOT_FOUND' };
  if (record.status === 'CLOSED') return { merchant_order: merchantOrder, status: 'CLOSED' };
  const body: Record<string, unknown> = {
    merchant_order: merchantOrder,
    status: record.status,
    amount: record.amount,
    txn: record.txn,
  };
  if (record.refundId) body.refund_id = record.refundId;
  return body;
}

function chargeAnswer(record: ChargeRecord): Outcome {
  const result = record.status === 'DECLINED' ? 'DECLINED' : 'CHARGED';
  return {
    httpStatus: 200,
    body: { result, txn: record.txn, merchant_order: record.merchantOrder, amount: record.amount },
  };
}

export interface ChargeRequest {
  merchantOrder: string;
  amount: number;
  notifyUrl: string;
  decline: boolean;
}

/** Idempotent by merchant order: a repeat gets the first answer and changes nothing. */
export function decideCharge(view: OrderView, request: ChargeRequest): Decision {
  const { current } = view;
  const mo = request.merchantOrder;
  if (current?.status === 'CLOSED') {
    return {
      outcome: {
        httpStatus: 409,
        body: channelProblem('CLOSED', `${mo} is closed; it can no longer be charged`, {
          result: 'CLOSED',
          merchant_order: mo,
        }),
      },
    };
  }
  if (current) {
    if (current.amount !== request.amount) {
      const detail = `${mo} was charged with amount ${current.amount}, not ${request.amount}`;
      return { outcome: { httpStatus: 422, body: channelProblem('AMOUNT_MISMATCH', detail, { merchant_order: mo }) } };
    }
    return { outcome: chargeAnswer(current) };
  }
  const status = request.decline ? 'DECLINED' : 'CHARGED';
  const txn = newId('txn');
  const record: ChargeRecord = {
    merchantOrder: mo,
    status,
    amount: request.amount,
    txn,
    notifyUrl: request.notifyUrl,
    refundKey: null,
    refundId: null,
  };
  // A decline moves no money, so it leaves no statement line.
  const line: LineDraft | undefined =
    status === 'CHARGED' ? { type: 'CHARGE', merchantOrder: mo, amount: request.amount, ref: txn } : undefined;
  const outcome = chargeAnswer(record);
  outcome.notify = { kind: status, merchantOrder: mo, amount: request.amount, txn, notifyUrl: request.notifyUrl };
  return { outcome, write: { record, line } };
}

/** Registers CLOSED when nothing was charged; otherwise reports what is there and changes nothing. */
export function decideClose(view: OrderView, merchantOrder: string): Decision {
  if (view.current) return { outcome: { httpStatus: 200, body: describeCharge(merchantOrder, view.current) } };
  const record = closedRecord(merchantOrder);
  return { outcome: { httpStatus: 200, body: describeCharge(merchantOrder, record) }, write: { record } };
}

export function decideQuery(view: OrderView, merchantOrder: string): Decision {
  return { outcome: { httpStatus: 200, body: describeCharge(merchantOrder, view.current) } };
}

export interface RefundRequest {
  merchantOrder: string;
  refundKey: string;
  amount: number;
}

function refundAnswer(record: ChargeRecord): Outcome {
  return {
    httpStatus: 200,
    body: {
      result: 'REFUNDED',
      refund_id: record.refundId,
      merchant_order: record.merchantOrder,
      amount: record.amount,
      txn: record.txn,
    },
  };
}

function refuse(httpStatus: number, code: ChannelCode, detail: string, extra: Record<string, unknown> = {}): Decision {
  return { outcome: { httpStatus, body: channelProblem(code, detail, extra) } };
}

/** Full refunds only, idempotent by refund key; one refund per charge. */
export async function decideRefund(view: OrderView, request: RefundRequest): Promise<Decision> {
  const { current } = view;
  const mo = request.merchantOrder;
  if (!current || (current.status !== 'CHARGED' && current.status !== 'REFUNDED')) {
    const status = current?.status ?? 'NOT_FOUND';
    return refuse(409, 'NOT_CHARGED', `${mo} has nothing to refund (status ${status})`, {
      merchant_order: mo,
      charge_status: status,
    });
  }
  if (request.amount !== current.amount) {
    return refuse(422, 'AMOUNT_MISMATCH', `only full refunds are supported: amount must be ${current.amount}`, {
      merchant_order: mo,
    });
  }
  if (current.status === 'REFUNDED') {
    if (current.refundKey === request.refundKey) return { outcome: refundAnswer(current) };
    return refuse(409, 'ALREADY_REFUNDED', `${mo} was already refunded under another refund_key`, {
      merchant_order: mo,
      refund_id: current.refundId,
    });
  }
  const owner = await view.refundKeyOwner(request.refundKey);
  if (owner !== undefined) {
    return refuse(422, 'REFUND_KEY_REUSED', `refund_key was already used for another merchant order`, {
      merchant_order: mo,
    });
  }
  const { amount, txn, notifyUrl } = current;
  invariant(amount !== null && txn !== null && notifyUrl !== null, `charged ${mo} lacks amount, txn or notify_url`);
  const refundId = newId('re');
  const record: ChargeRecord = { ...current, status: 'REFUNDED', refundKey: request.refundKey, refundId };
  const outcome = refundAnswer(record);
  outcome.notify = { kind: 'REFUNDED', merchantOrder: mo, amount, txn, notifyUrl };
  return { outcome, write: { record, line: { type: 'REFUND', merchantOrder: mo, amount, ref: refundId } } };
}

/**
 * The statement's answer. Paged (`page` given), it adds `next`: the cursor to resume from (the last
 * line's seq, or `after` itself when nothing is new), and `net` is the net of these lines.
 */
export function statementBody(
  lines: StatementLine[],
  page?: StatementPage,
): { lines: Record<string, unknown>[]; net: number; next?: string } {
  let net = 0;
  const out = lines.map((line) => {
    net += line.type === 'CHARGE' ? line.amount : -line.amount;
    return { type: line.type, merchant_order: line.merchantOrder, amount: line.amount, ref: line.ref, at: line.at };
  });
  if (!page) return { lines: out, net };
  return { lines: out, net, next: String(lines.at(-1)?.seq ?? page.after) };
}
