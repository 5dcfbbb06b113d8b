import { inflateRawSync } from 'node:zlib';
import { statementOf, type StatementLine } from '../channel.client.ts';
import { minorFromDecimal } from '../../platform/money.ts';

// Alipay's trade bill (alipay.data.dataservice.bill.downloadurl.query → bill_download_url). Alipay
// serves a zip of CSV files (the 业务明细 detail and a 汇总 summary); the parser also takes a plain
// CSV. The detail is read by column name: `#` lines are comments, the first other line is the
// header, then one row per payment (业务类型 交易) or refund (退款, a negative 订单金额).

const ZIP_LOCAL_HEADER = 0x04034b50;
const ZIP_CENTRAL_HEADER = 0x02014b50;
const ZIP_END = 0x06054b50;
/** A bill bigger than this is not a day of this service's trades: refused, never inflated blindly. */
const MAX_BILL_BYTES = 64 * 1024 * 1024;

/** The files of a zip, by name, read through its central directory (sizes are there even with data descriptors). */
function unzip(zip: Buffer): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  let end = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 65_535); i--)
    if (zip.readUInt32LE(i) === ZIP_END) {
      end = i;
      break;
    }
  if (end < 0) throw new Error('alipay bill: not a zip (no end of central directory)');
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  for (let n = 0; n < count; n++) {
    if (zip.readUInt32LE(at) !== ZIP_CENTRAL_HEADER) throw new Error('alipay bill: broken zip directory');
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const size = zip.readUInt32LE(at + 24);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    // Alipay's names are GBK; only the 业务明细 / 汇总 suffix matters, and "汇总" is checked by bytes below.
    const name = zip.subarray(at + 46, at + 46 + nameLength);
    if (zip.readUInt32LE(local) !== ZIP_LOCAL_HEADER) throw new Error('alipay bill: broken zip entry');
    const dataAt = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    if (size > MAX_BILL_BYTES) throw new Error('alipay bill: a file in the zip is too large');
    const data = zip.subarray(dataAt, dataAt + compressed);
    files.set(name.toString('latin1'), method === 0 ? data : inflateRawSync(data, { maxOutputLength: MAX_BILL_BYTES }));
    at += 46 + nameLength + extraLength + commentLength;
  }
  return files;
}

/** The CSV text of the detail file: the zip entry that is not the summary (汇总), or the body itself. */
export function billText(body: Buffer): string {
  const isZip = body.length >= 4 && body.readUInt32LE(0) === ZIP_LOCAL_HEADER;
  if (!isZip) return body.toString('utf8');
  const summaryUtf8 = Buffer.from('汇总', 'utf8').toString('latin1');
  const summaryGbk = Buffer.from([0xbb, 0xe3, 0xd7, 0xdc]).toString('latin1');
  const entries = [...unzip(body)].filter(([name]) => name.endsWith('.csv'));
  const detail = entries.find(([name]) => !name.includes(summaryUtf8) && !name.includes(summaryGbk)) ?? entries[0];
  if (!detail) throw new Error('alipay bill: no CSV in the zip');
  // Alipay writes its bills in GBK; the double in UTF-8. Node's TextDecoder knows both.
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  try {
    return utf8.decode(detail[1]);
  } catch {
    return new TextDecoder('gbk').decode(detail[1]);
  }
}

function csvRow(line: string): string[] {
  const out: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted && c === '"' && line[i + 1] === '"') {
      field += '"';
      i++;
    } else if (c === '"') {
      quoted = !quoted;
    } else if (c === ',' && !quoted) {
      out.push(field.trim());
      field = '';
    } else {
      field += c;
    }
  }
  out.push(field.trim());
  return out;
}

/** The bill's detail as flashpay's statement: CHARGE for 交易, REFUND for 退款; net = charges − refunds. */
export function parseBill(csv: string): { lines: StatementLine[]; net: number } {
  const rows = csv.split(/\r?\n/).filter((line) => line.trim() !== '' && !line.startsWith('#'));
  const [header, ...body] = rows;
  if (!header) throw new Error('alipay bill: no header row');
  const names = csvRow(header);
  const column = (name: string) => {
    const index = names.findIndex((n) => n.startsWith(name));
    if (index < 0) throw new Error(`alipay bill: no column ${name}`);
    return index;
  };
  const [trade, order, kind, amountAt, requestNo] = [
    '支付宝交易号',
    '商户订单号',
    '业务类型',
    '订单金额',
    '退款批次号',
  ].map(column);
  const lines: StatementLine[] = [];
  for (const raw of body) {
    const cells = csvRow(raw);
    const type = cells[kind!] === '退款' ? 'REFUND' : cells[kind!] === '交易' ? 'CHARGE' : undefined;
    if (!type) continue; // other business types move no money of a flashpay order
    const amount = minorFromDecimal(cells[amountAt!]);
    if (amount === undefined) throw new Error(`alipay bill: amount ${cells[amountAt!]} is not yuan`);
    const ref = type === 'REFUND' ? cells[requestNo!] || cells[trade!] : cells[trade!];
    lines.push({ type, merchant_order: cells[order!] ?? '', amount: Math.abs(amount), ref: ref ?? '' });
  }
  return statementOf(lines);
}
