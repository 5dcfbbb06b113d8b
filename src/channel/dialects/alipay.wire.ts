import { createSign, createVerify } from 'node:crypto';
import { crc32, deflateRawSync } from 'node:zlib';
import type { StatementLine } from '../ledger.ts';
import { decimalFromMinor } from '../../platform/money.ts';

// Alipay's words on the wire (OpenAPI 2.0, RSA2): how requests, answers and async notifies are
// signed, how yuan amounts are written, and the bill file. Shared by the double; the adapter lets
// the official SDK do its half and only reads the bill here (src/payments/providers/alipay.bill.ts).

/** RSA2 is SHA256withRSA over UTF-8, base64 signature. */
const ALGORITHM = 'RSA-SHA256';

/** The content Alipay signs: every non-empty parameter but `sign` (and `sign_type` for a notify), sorted, `k=v` joined with `&`. */
function signContent(params: Record<string, string>, exclude: readonly string[]): string {
  return Object.keys(params)
    .filter((key) => !exclude.includes(key) && params[key] !== undefined && params[key] !== '')
    .sort()
    .map((key) => `${key}=${params[key]}`)
    .join('&');
}

function rsa2Sign(content: string, privateKey: string): string {
  return createSign(ALGORITHM).update(content, 'utf8').sign(privateKey, 'base64');
}

function rsa2Verify(content: string, signature: string, publicKey: string): boolean {
  try {
    return createVerify(ALGORITHM).update(content, 'utf8').verify(publicKey, signature, 'base64');
  } catch {
    return false; // a malformed signature is a bad one
  }
}

/** A request's signature covers every parameter but `sign`, `sign_type` included (the SDK's `sign()`). */
export function verifyRequest(params: Record<string, string>, publicKey: string): boolean {
  return rsa2Verify(signContent(params, ['sign']), params.sign ?? '', publicKey);
}

/**
 * An answer: `{"<method>_response": {...}, "sign": "..."}`, the signature over the exact JSON text
 * of the response node (the SDK cuts that text out of the body and verifies it).
 */
export function signedAnswer(method: string, node: Record<string, unknown>, privateKey: string): string {
  const key = `${method.replaceAll('.', '_')}_response`;
  const text = JSON.stringify(node);
  return `{"${key}":${text},"sign":"${rsa2Sign(text, privateKey)}"}`;
}

/** A notify's signature excludes `sign` and `sign_type` (Alipay's async notify rule). */
export function signNotify(params: Record<string, string>, privateKey: string): string {
  return rsa2Sign(signContent(params, ['sign', 'sign_type']), privateKey);
}

/** The columns of Alipay's trade bill (业务明细) the double writes; a real bill has more, read by name. */
const BILL_COLUMNS = [
  '支付宝交易号',
  '商户订单号',
  '业务类型',
  '商品名称',
  '创建时间',
  '完成时间',
  '订单金额（元）',
  '商家实收（元）',
  '退款批次号/请求号',
] as const;

const csvField = (value: string) => (/[",\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value);

/**
 * The trade bill as Alipay lays it out: `#` comment lines, the header row, one row per payment
 * (交易) or refund (退款, negative amounts), an end marker and a summary. The ledger's line ref is
 * the trade no of a payment and the refund's own id for a refund.
 */
export function billCsv(lines: StatementLine[], billDate: string): string {
  const txns = new Map(lines.filter((l) => l.type === 'CHARGE').map((l) => [l.merchantOrder, l.ref]));
  const rows = lines.map((line) => {
    const refund = line.type === 'REFUND';
    const amount = decimalFromMinor(refund ? -line.amount : line.amount);
    const txn = refund ? (txns.get(line.merchantOrder) ?? '') : line.ref;
    return [
      txn,
      line.merchantOrder,
      refund ? '退款' : '交易',
      'flashpay order',
      line.at,
      line.at,
      amount,
      amount,
      refund ? line.ref : '',
    ]
      .map(csvField)
      .join(',');
  });
  return [
    '#支付宝业务明细查询',
    `#账务日期：[${billDate}]`,
    '#业务明细列表',
    BILL_COLUMNS.join(','),
    ...rows,
    '#-----------------------------------------业务明细列表结束------------------------------------',
    `#交易合计：${lines.filter((l) => l.type === 'CHARGE').length}笔`,
    `#导出时间：[${new Date().toISOString()}]`,
    '',
  ].join('\r\n');
}

/** One file in a zip (stored deflated), as Alipay serves its bills: `<date>_业务明细.csv` inside. */
export function zipOne(name: string, content: Buffer): Buffer {
  const nameBytes = Buffer.from(name, 'utf8');
  const data = deflateRawSync(content);
  const crc = crc32(content);
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4);
  local.writeUInt16LE(0x0800, 6); // UTF-8 names
  local.writeUInt16LE(8, 8); // deflate
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(content.length, 22);
  local.writeUInt16LE(nameBytes.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt16LE(0x0800, 8);
  central.writeUInt16LE(8, 10);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(content.length, 24);
  central.writeUInt16LE(nameBytes.length, 28);
  const centralOffset = local.length + nameBytes.length + data.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + nameBytes.length, 12);
  end.writeUInt32LE(centralOffset, 16);
  return Buffer.concat([local, nameBytes, data, central, nameBytes, end]);
}
