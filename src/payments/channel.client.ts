import { randomUUID } from 'node:crypto';
import { httpRequest } from '../platform/http.client.ts';
import { mutant } from '../platform/mutations.ts';
import type { ProviderName } from '../platform/provider.config.ts';

// The provider as we see it: every call has a timeout, and a call whose answer we did not get
// is UNKNOWN — the money may have moved. Never read a timeout as a failure.
export type ChargeReply =
  | { kind: 'CHARGED' | 'CLOSED'; txn?: string }
  /** `reason`: a sentence and the provider's code when the refusal was not the card's (an amount past the maximum). */
  | { kind: 'DECLINED'; txn?: string; reason?: string }
  | { kind: 'UNKNOWN'; reason: string; action?: BuyerAction };
export type ChargeStatus = 'CHARGED' | 'DECLINED' | 'CLOSED' | 'REFUNDED' | 'NOT_FOUND';
export type StatusReply =
  | { kind: 'STATUS'; status: ChargeStatus; amount?: number; txn?: string }
  | { kind: 'UNKNOWN'; reason: string; pendingAtProvider?: string };

/**
 * What the buyer must do before the money can move (issue 37): Stripe's `requires_action` (3-D
 * Secure, with the PaymentIntent's client secret), Alipay's `WAIT_BUYER_PAY`. The order is UNKNOWN
 * meanwhile — the money may yet move — and converges by notification or query like any unknown.
 */
export interface BuyerAction {
  type: 'REQUIRES_ACTION' | 'WAIT_BUYER_PAY';
  client_secret?: string;
}
export type RefundReply =
  /** `already`: the provider had refunded the payment before (its dashboard); this call moved no money. */
  | { kind: 'REFUNDED'; refundId: string; already?: boolean }
  /** `detail`: a sentence and the provider's code (`providerNote`), never the provider's raw body. */
  | { kind: 'REFUSED'; status: number; code: string; detail: string }
  | { kind: 'UNKNOWN'; reason: string };

/** The longest note a provider's answer leaves on an order (a person reads it in the attention list). */
export const MAX_PROVIDER_NOTE_CHARS = 200;

/**
 * A provider's refusal as a note for a person: `"<sentence> (<code>)"`, one line, bounded. The
 * sentence is ours or the provider's human message; the code is the provider's. Never a raw body:
 * a body may be long, carry ids a person does not need, or text a console must not render.
 */
export function providerNote(sentence: string, code: string): string {
  const oneLine = (text: string) =>
    text
      .replace(/[\u0000-\u001f\u007f]+/g, ' ')
      .replace(/\s+/g, ' ')
      .trim();
  const tail = ` (${oneLine(code).slice(0, 60) || 'no code'})`;
  const room = MAX_PROVIDER_NOTE_CHARS - tail.length;
  const text = oneLine(sentence) || 'the provider refused';
  return (text.length > room ? `${text.slice(0, room - 1)}…` : text) + tail;
}

export interface StatementLine {
  type: 'CHARGE' | 'REFUND';
  /** The provider whose ledger the line is from (issue 48); set by the provider port (routing.ts). */
  provider?: ProviderName;
  merchant_order: string;
  amount: number;
  ref: string;
}

/** A statement of these lines: what they took in, charges less refunds. */
export function statementOf(lines: StatementLine[]): { lines: StatementLine[]; net: number } {
  return { lines, net: lines.reduce((net, line) => net + (line.type === 'CHARGE' ? line.amount : -line.amount), 0) };
}

export interface ChannelClient {
  /**
   * `customer` ("<tenant>/<user>") lets a provider with customer accounts check the balance;
   * `paymentMethod` is what the buyer paid with at a real provider (a Stripe PaymentMethod id, an
   * Alipay buyer's auth code), passed through from the pay request.
   */
  charge(
    merchantOrder: string,
    amount: number,
    notifyUrl: string,
    customer?: string,
    paymentMethod?: string,
  ): Promise<ChargeReply>;
  /** An UNKNOWN with `pendingAtProvider`: the provider has the payment, still waiting for the buyer. */
  query(merchantOrder: string): Promise<StatusReply>;
  close(merchantOrder: string): Promise<StatusReply>;
  refund(merchantOrder: string, refundKey: string, amount: number): Promise<RefundReply>;
  /** The provider's ledger, for reconciliation; throws when it cannot be read. */
  statement(): Promise<{ lines: StatementLine[]; net: number }>;
  /** The lines after a cursor (null: from the start), at most `limit`, and the cursor to resume from. */
  statementPage?(after: string | null, limit: number): Promise<{ lines: StatementLine[]; net: number; next: string }>;
  /** Orders the fulfilment double lists as FULFILLED (seed 002's reconciliation); undefined when it cannot list them. */
  fulfilled?(): Promise<Set<string> | undefined>;
}

// A statement is one bulk read, not a payment call: it gets its own, longer limit.
const STATEMENT_TIMEOUT_MS = 30_000;

interface Reply {
  status: number;
  body: Record<string, unknown>;
}

function reasonOf(error: unknown): string {
  const e = error as { name?: string; code?: string; cause?: { code?: string }; message?: string };
  if (e.name === 'TimeoutError' || e.name === 'AbortError') return 'timeout';
  return `io error (${e.cause?.code ?? e.code ?? e.message ?? 'unknown'})`;
}

export function channelClient(baseUrl: string, timeoutMs: number): ChannelClient {
  async function send(method: 'GET' | 'POST', path: string, body?: unknown): Promise<Reply | { unknown: string }> {
    try {
      const response = await httpRequest(`${baseUrl}${path}`, {
        method,
        ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
        timeoutMs,
      });
      // A 5xx says nothing reliable about the ledger: treat it like a lost answer.
      if (response.status >= 500) return { unknown: `http ${response.status}` };
      return {
        status: response.status,
        body: response.text ? (JSON.parse(response.text) as Record<string, unknown>) : {},
      };
    } catch (error) {
      return { unknown: reasonOf(error) };
    }
  }
  /** A bulk read (statement, fulfilments): its own, longer limit; throws unless HTTP 200. */
  async function read<T>(path: string, what: string): Promise<T> {
    const response = await httpRequest(`${baseUrl}${path}`, { timeoutMs: STATEMENT_TIMEOUT_MS });
    if (response.status !== 200) throw new Error(`provider ${what}: HTTP ${response.status}`);
    return JSON.parse(response.text) as T;
  }

  const statusReply = (reply: Reply | { unknown: string }): StatusReply => {
    if ('unknown' in reply) return { kind: 'UNKNOWN', reason: reply.unknown };
    const status = reply.body.status as ChargeStatus | undefined;
    if (reply.status !== 200 || !status) return { kind: 'UNKNOWN', reason: `unexpected reply ${reply.status}` };
    return {
      kind: 'STATUS',
      status,
      amount: reply.body.amount as number | undefined,
      txn: reply.body.txn as string | undefined,
    };
  };

  return {
    async charge(merchantOrder, amount, notifyUrl, customer) {
      const reply = await send('POST', '/charge', {
        merchant_order: merchantOrder,
        amount,
        notify_url: notifyUrl,
        ...(customer !== undefined ? { customer } : {}),
      });
      if ('unknown' in reply) return { kind: 'UNKNOWN', reason: reply.unknown };
      const result = reply.body.result;
      if (result === 'CHARGED' || result === 'DECLINED' || result === 'CLOSED')
        return { kind: result, txn: reply.body.txn as string | undefined };
      return { kind: 'UNKNOWN', reason: `unexpected charge reply ${reply.status}` };
    },
    async query(merchantOrder) {
      return statusReply(await send('GET', `/charges/${encodeURIComponent(merchantOrder)}`));
    },
    async close(merchantOrder) {
      return statusReply(await send('POST', '/close', { merchant_order: merchantOrder }));
    },
    async refund(merchantOrder, refundKey, amount) {
      const reply = await send('POST', '/refund', { merchant_order: merchantOrder, refund_key: refundKey, amount });
      if ('unknown' in reply) return { kind: 'UNKNOWN', reason: reply.unknown };
      if (reply.status === 200 && reply.body.result === 'REFUNDED')
        return { kind: 'REFUNDED', refundId: String(reply.body.refund_id) };
      // Refunded before under another key (a refund made at the provider): the money is back already.
      if (reply.body.code === 'ALREADY_REFUNDED')
        return { kind: 'REFUNDED', refundId: String(reply.body.refund_id ?? 'unknown'), already: true };
      const code = typeof reply.body.code === 'string' ? reply.body.code : `http ${reply.status}`;
      const title = typeof reply.body.title === 'string' ? reply.body.title : 'The channel refused the refund';
      return { kind: 'REFUSED', status: reply.status, code, detail: providerNote(title, code) };
    },
    async statement() {
      return read<{ lines: StatementLine[]; net: number }>('/statement', 'statement');
    },
    async statementPage(after, limit) {
      const query = new URLSearchParams({ after: after ?? '0', limit: String(limit) });
      const body = await read<{ lines: StatementLine[]; net: number; next?: string }>(
        `/statement?${query}`,
        'statement page',
      );
      // A provider that ignores the cursor answers the whole statement without `next`: not resumable.
      if (typeof body.next !== 'string') throw new Error('provider statement page: no `next` cursor in the answer');
      return { lines: body.lines, net: body.net, next: body.next };
    },
    async fulfilled() {
      try {
        const body = await read<{ fulfilments: Array<{ order_id: string; status: string }> }>(
          '/fulfilments',
          'fulfilments',
        );
        return new Set(body.fulfilments.filter((f) => f.status === 'FULFILLED').map((f) => f.order_id));
      } catch {
        return undefined;
      }
    },
  };
}

/** The refund key of an order is fixed, so every retry is the same refund at the provider. */
export function refundKeyFor(orderId: string): string {
  if (mutant('payments.refund.fixed-key', orderId)) return `rf-${orderId}-${randomUUID().slice(0, 8)}`;
  return `rf-${orderId}`;
}
