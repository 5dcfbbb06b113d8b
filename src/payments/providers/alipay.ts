import { rsaPrivateKey } from '../../platform/rsa-key.ts';
import type { AlipaySdk } from 'alipay-sdk';
import type { AlipaySettings } from '../../platform/provider.config.ts';
import {
  providerNote,
  refundKeyFor,
  type ChannelClient,
  type RefundReply,
  type StatusReply,
} from '../channel.client.ts';
import { decimalFromMinor, minorFromDecimal } from '../../platform/money.ts';
import { billText, parseBill } from './alipay.bill.ts';
import { webhookUrl } from './webhook-paths.ts';

// Alipay through its official SDK (alipay-sdk 4.14.0, OpenAPI 2.0, RSA2). Face-to-face barcode
// payment: flashpay's order id is out_trade_no everywhere, so every retry is the same trade. Every
// answer's signature is verified by the SDK (validateSign); an answer we did not get, could not
// verify or that says "system error" is UNKNOWN: the money may have moved.

type Node = Record<string, unknown>;
type Result = { node: Node } | { unknown: string };

/** The bar_code scene's subject: what the buyer sees on their Alipay receipt. */
const SUBJECT = 'flashpay order';
/** A bill is one bulk download, not a payment call: its own, longer limit. */
const BILL_TIMEOUT_MS = 30_000;
/** Business failures that mean "this pay will not take money" (a decline), not "ask again". */
const DECLINES = new Set([
  'ACQ.PAYMENT_AUTH_CODE_INVALID',
  'ACQ.BUYER_BALANCE_NOT_ENOUGH',
  'ACQ.BUYER_BANKCARD_BALANCE_NOT_ENOUGH',
  'ACQ.ERROR_BALANCE_PAYMENT_DISABLE',
  'ACQ.BUYER_SELLER_EQUAL',
  'ACQ.TRADE_BUYER_NOT_MATCH',
  'ACQ.BUYER_ENABLE_STATUS_FORBID',
  'ACQ.PULL_MOBILE_CASHIER_FAIL',
  'ACQ.PAYMENT_FAIL',
  'ACQ.TRADE_HAS_CLOSE',
  // total_amount past Alipay's maximum (100,000,000.00 CNY): the same amount is refused every time.
  'ACQ.TOTAL_FEE_EXCEED',
]);

/** A short reason for an UNKNOWN: the call and Alipay's code and sub_code (never the request, never a key). */
const reasonOf = (call: string, node: Node) =>
  ['alipay', call, String(node.code), String(node.sub_code ?? '')].filter(Boolean).join(' ');

/** Any PEM or bare base64 (PKCS#8 or PKCS#1) private key as PKCS#8 PEM, the form the SDK is told to expect. */
const pkcs8 = (key: string) =>
  rsaPrivateKey(key, 'ALIPAY_PRIVATE_KEY').export({ type: 'pkcs8', format: 'pem' }).toString();

/**
 * The SDK client, loaded only where some tenant pays through Alipay: its HTTP client (urllib)
 * patches Node's sockets process-wide when imported, which a service without Alipay need not carry.
 * Credentials are checked at once (a misconfiguration fails the start, not the first pay).
 */
export function alipaySdk(settings: AlipaySettings, timeoutMs: number): Promise<AlipaySdk> {
  const { appId, privateKey, publicKey, gateway } = settings;
  // Named, never shown: a credential is not put in an error message.
  if (!appId || !privateKey || !publicKey)
    throw new Error('FLASHPAY_PROVIDER=alipay needs ALIPAY_APP_ID, ALIPAY_PRIVATE_KEY and ALIPAY_PUBLIC_KEY');
  const key = pkcs8(privateKey);
  return import('alipay-sdk').then(
    ({ AlipaySdk }) =>
      new AlipaySdk({
        appId,
        privateKey: key,
        keyType: 'PKCS8',
        alipayPublicKey: publicKey,
        ...(gateway ? { gateway } : {}),
        timeout: timeoutMs,
        camelcase: false,
      }),
  );
}

export function alipayClient(settings: AlipaySettings, timeoutMs: number): ChannelClient {
  const sdk = alipaySdk(settings, timeoutMs);

  async function send(method: string, bizContent: Node, extra: Record<string, string>): Promise<Result> {
    try {
      const node = (await (await sdk).exec(method, { bizContent, ...extra }, { validateSign: true })) as Node;
      // 20000 and ACQ.SYSTEM_ERROR: Alipay could not say; the trade may exist.
      if (node.code === '20000' || node.sub_code === 'ACQ.SYSTEM_ERROR') return { unknown: reasonOf('', node) };
      return { node };
    } catch (error) {
      // Timeouts, resets, 5xx and answers whose signature did not verify: nothing we may believe.
      const e = error as { name?: string; cause?: { name?: string; code?: string } };
      return { unknown: `alipay ${e.cause?.code ?? e.cause?.name ?? e.name ?? 'error'}` };
    }
  }

  /**
   * One gateway call within `timeoutMs`. The SDK's own timeout (urllib on undici) is only as fine as
   * undici's one-second timer wheel, so a 300 ms budget is kept here; the late answer is dropped.
   */
  async function exec(method: string, bizContent: Node, extra: Record<string, string> = {}): Promise<Result> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<Result>((resolve) => {
      timer = setTimeout(() => resolve({ unknown: 'timeout' }), timeoutMs);
    });
    try {
      return await Promise.race([send(method, bizContent, extra), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  async function status(mo: string): Promise<StatusReply> {
    const result = await exec('alipay.trade.query', { out_trade_no: mo });
    if ('unknown' in result) return { kind: 'UNKNOWN', reason: result.unknown };
    const { node } = result;
    if (node.sub_code === 'ACQ.TRADE_NOT_EXIST') return { kind: 'STATUS', status: 'NOT_FOUND' };
    if (node.code !== '10000') return { kind: 'UNKNOWN', reason: reasonOf('query', node) };
    const amount = minorFromDecimal(node.total_amount);
    const txn = typeof node.trade_no === 'string' ? node.trade_no : undefined;
    switch (node.trade_status) {
      case 'TRADE_SUCCESS':
      case 'TRADE_FINISHED':
        return { kind: 'STATUS', status: 'CHARGED', amount, txn };
      case 'WAIT_BUYER_PAY':
        return { kind: 'UNKNOWN', reason: 'WAIT_BUYER_PAY', pendingAtProvider: 'WAIT_BUYER_PAY' };
      case 'TRADE_CLOSED':
        return closedOrRefunded(mo, amount, txn);
      default:
        return { kind: 'UNKNOWN', reason: `alipay trade_status ${String(node.trade_status)}` };
    }
  }

  /** TRADE_CLOSED is both "never paid" and "paid, then fully refunded": our fixed refund key tells them apart. */
  async function closedOrRefunded(
    mo: string,
    amount: number | undefined,
    txn: string | undefined,
  ): Promise<StatusReply> {
    const result = await exec('alipay.trade.fastpay.refund.query', {
      out_trade_no: mo,
      out_request_no: refundKeyFor(mo),
    });
    if ('unknown' in result) return { kind: 'UNKNOWN', reason: result.unknown };
    if (result.node.code === '10000' && result.node.refund_status === 'REFUND_SUCCESS')
      return { kind: 'STATUS', status: 'REFUNDED', amount, txn };
    if (result.node.code !== '10000')
      return { kind: 'UNKNOWN', reason: `alipay refund query ${String(result.node.sub_code ?? result.node.code)}` };
    return { kind: 'STATUS', status: 'CLOSED' };
  }

  /**
   * Alipay refused our refund. flashpay refunds only trades it knows were paid, and a paid trade
   * becomes TRADE_CLOSED only by a full refund: if the trade is closed now, it was refunded before
   * under another out_request_no (in Alipay's merchant portal), and the money is back already.
   */
  async function refusedOrAlreadyRefunded(mo: string, subCode: string): Promise<RefundReply> {
    const trade = await exec('alipay.trade.query', { out_trade_no: mo });
    if ('unknown' in trade) return { kind: 'UNKNOWN', reason: trade.unknown };
    if (trade.node.code === '10000' && trade.node.trade_status === 'TRADE_CLOSED')
      return { kind: 'REFUNDED', refundId: `already:${mo}`, already: true };
    return { kind: 'REFUSED', status: 409, code: subCode, detail: providerNote('Alipay refused the refund', subCode) };
  }

  return {
    async charge(merchantOrder, amount, notifyUrl, _customer, paymentMethod) {
      const biz = {
        out_trade_no: merchantOrder,
        total_amount: decimalFromMinor(amount),
        subject: SUBJECT,
        scene: 'bar_code',
        ...(paymentMethod ? { auth_code: paymentMethod } : {}),
      };
      const notify = webhookUrl(notifyUrl, 'alipay');
      const result = await exec('alipay.trade.pay', biz, { notify_url: notify });
      if ('unknown' in result) return { kind: 'UNKNOWN', reason: result.unknown };
      const { node } = result;
      const txn = typeof node.trade_no === 'string' ? node.trade_no : undefined;
      if (node.code === '10000') return { kind: 'CHARGED', txn };
      // The buyer must confirm on their phone: the money may yet move, so UNKNOWN until notify or query.
      if (node.code === '10003')
        return { kind: 'UNKNOWN', reason: 'WAIT_BUYER_PAY', action: { type: 'WAIT_BUYER_PAY' } };
      if (node.code === '40004' && DECLINES.has(String(node.sub_code)))
        return node.sub_code === 'ACQ.TOTAL_FEE_EXCEED'
          ? {
              kind: 'DECLINED',
              txn,
              reason: 'the amount is more than Alipay accepts for one trade (ACQ.TOTAL_FEE_EXCEED)',
            }
          : { kind: 'DECLINED', txn };
      return { kind: 'UNKNOWN', reason: reasonOf('pay', node) };
    },
    query: status,
    async close(merchantOrder) {
      const result = await exec('alipay.trade.close', { out_trade_no: merchantOrder });
      if ('unknown' in result) return { kind: 'UNKNOWN', reason: result.unknown };
      const { node } = result;
      if (node.code === '10000') return { kind: 'STATUS', status: 'CLOSED' };
      // Alipay cannot block a pay still on its way: NOT_FOUND, and a late charge is refunded or re-reserved.
      if (node.sub_code === 'ACQ.TRADE_NOT_EXIST') return { kind: 'STATUS', status: 'NOT_FOUND' };
      if (node.sub_code === 'ACQ.TRADE_STATUS_ERROR') return status(merchantOrder);
      return { kind: 'UNKNOWN', reason: reasonOf('close', node) };
    },
    async refund(merchantOrder, refundKey, amount) {
      const result = await exec('alipay.trade.refund', {
        out_trade_no: merchantOrder,
        refund_amount: decimalFromMinor(amount),
        out_request_no: refundKey,
      });
      if ('unknown' in result) return { kind: 'UNKNOWN', reason: result.unknown };
      const { node } = result;
      // A repeat under the same out_request_no is the same refund (fund_change N): still REFUNDED.
      if (node.code === '10000') return { kind: 'REFUNDED', refundId: refundKey };
      if (node.code === '40004') return refusedOrAlreadyRefunded(merchantOrder, String(node.sub_code ?? '40004'));
      return { kind: 'UNKNOWN', reason: reasonOf('refund', node) };
    },
    async statement() {
      // Alipay's bills are per day (China time). The double's bill is its whole ledger whatever the day.
      const billDate = new Date(Date.now() + 8 * 3_600_000).toISOString().slice(0, 10);
      const result = await exec('alipay.data.dataservice.bill.downloadurl.query', {
        bill_type: 'trade',
        bill_date: billDate,
      });
      if ('unknown' in result) throw new Error(`alipay bill url: ${result.unknown}`);
      const url = result.node.bill_download_url;
      if (result.node.code !== '10000' || typeof url !== 'string')
        throw new Error(`alipay bill url: ${String(result.node.sub_code ?? result.node.code)}`);
      // A zip is bytes: fetch, not the text-only http client.
      const response = await fetch(url, { signal: AbortSignal.timeout(BILL_TIMEOUT_MS) });
      if (response.status !== 200) throw new Error(`alipay bill: HTTP ${response.status}`);
      return parseBill(billText(Buffer.from(await response.arrayBuffer())));
    },
  };
}
