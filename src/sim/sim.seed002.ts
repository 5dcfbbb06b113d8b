import { summaryLine, type ReconciliationReport } from '../reconcile/index.ts';
import { controlHttp, http, type Reply, type SimTarget } from './sim.client.ts';

// Seed 002's own run, over HTTP only: two units, a balance of 500, a booking of 120 delivered twice,
// the fulfilment refused, the first refund unavailable, recovery, then the compensation repeated.
// Each of the seed's five facts is checked, not just printed; the run is ok only when all hold.

export interface Seed002Report {
  lines: string[];
  facts: boolean[];
  reconciliation: ReconciliationReport;
  ok: boolean;
}

const PRICE = 120;
const STOCK = 2;
const BALANCE = 500;

export async function runSeed002(target: SimTarget, tenant: string, sku: string): Promise<Seed002Report> {
  const admin = (method: string, path: string, body?: unknown) =>
    http(`${target.api}${path}`, { method, token: target.adminToken, body });
  const control = (path: string, body: unknown) => controlHttp(target, path, { method: 'POST', body });
  const user = `booker-${sku}`;
  const customer = `${tenant}/${user}`;
  const token = await target.buyerToken(user);
  const expectOk = (what: string, reply: Reply) => {
    if (reply.status >= 300) throw new Error(`${what}: ${reply.status} ${JSON.stringify(reply.body)}`);
    return reply;
  };
  expectOk(
    'create SKU',
    await admin('POST', '/v1/admin/skus', { sku, name: 'Seed 002 seat', price: PRICE, stock: STOCK }),
  );
  expectOk('set account', await control('/_control/accounts', { customer, balance: BALANCE }));
  const units = async () => (await admin('GET', `/v1/admin/skus/${sku}`)).body.available as number;
  const balance = async () =>
    (await controlHttp(target, `/_control/accounts/${encodeURIComponent(customer)}`)).body.balance as number;
  const status = async (orderId: string) =>
    (await admin('GET', `/v1/admin/orders/${orderId}`)).body as { status: string; fulfilment?: { status: string } };
  // No PAYING order here: the default stale threshold (never below the pay timeout's floor) will do.
  const recover = async () => expectOk('recover', await admin('POST', '/v1/admin/recovery/run', {}));
  const book = async () => {
    const created = expectOk(
      'book',
      await http(`${target.api}/v1/orders`, { method: 'POST', token, body: { sku }, key: 'booking-42' }),
    );
    return created.body.order_id as string;
  };
  const pay = (orderId: string) =>
    http(`${target.api}/v1/orders/${orderId}/pay`, { method: 'POST', token, key: 'booking-42/pay' });

  const orderId = await book();
  // The ticket office refuses this booking for good, and the refund service is down for one call.
  expectOk('arm fulfil', await control('/_control/faults', { op: 'fulfil', kind: 'REFUSE', merchant_order: orderId }));
  expectOk(
    'arm refund',
    await control('/_control/faults', { op: 'refund', kind: 'ERROR_500', merchant_order: orderId }),
  );
  expectOk('pay', await pay(orderId));
  if ((await book()) !== orderId) throw new Error('the repeated booking made a second order');
  expectOk('pay again', await pay(orderId));
  const facts: boolean[] = [];
  const lines: string[] = [];
  const fact = (holds: boolean, line: string) => {
    facts.push(holds);
    lines.push(`${line}${holds ? '' : '   <-- expected otherwise'}`);
  };
  let u = await units();
  let b = await balance();
  fact(u === 1 && b === 380, `after the duplicate booking: units=${u} balance=${b}`);

  await recover();
  const refused = await status(orderId);
  fact(
    refused.fulfilment?.status === 'REFUSED' && ['COMPENSATION_PENDING', 'COMPENSATING'].includes(refused.status),
    `fulfilment failed (${refused.fulfilment?.status}): compensating in reverse — refund first, then release`,
  );
  u = await units();
  b = await balance();
  fact(
    refused.status === 'COMPENSATION_PENDING' && u === 1 && b === 380,
    `refund unavailable: ${refused.status} units=${u} balance=${b}`,
  );

  await recover();
  const after = await status(orderId);
  u = await units();
  b = await balance();
  fact(
    after.status === 'COMPENSATED' && u === 2 && b === 500,
    `after recovery: ${after.status} units=${u} balance=${b}`,
  );

  await recover();
  await book(); // the booking delivered once more: an old intent, replayed, not a new purchase
  u = await units();
  b = await balance();
  fact(
    (await status(orderId)).status === 'COMPENSATED' && u === 2 && b === 500,
    `after a repeated compensation: units=${u} balance=${b}`,
  );

  const reconciliation = (await admin('GET', '/v1/admin/reconciliation')).body as ReconciliationReport;
  lines.push(`note ${summaryLine(reconciliation)}`);
  const clean = reconciliation.mismatches.length === 0 && reconciliation.pending === 0;
  return { lines, facts, reconciliation, ok: facts.every(Boolean) && clean };
}
