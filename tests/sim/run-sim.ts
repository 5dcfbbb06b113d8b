import { spawn } from 'node:child_process';
import pg from 'pg';
import { expect } from 'vitest';
import type { Db } from '../../src/platform/db.ts';
import { withDatabase } from '../../src/platform/embedded.ts';
import { freshDatabase } from '../support/db.ts';
import { BIN } from '../support/process.ts';

/** What `flashpay sim --json` prints. */
export interface SimJson {
  ok: boolean;
  final: Record<string, number>;
  reconciliation: {
    pending: number;
    mismatches: unknown[];
    totals: {
      channel_net: number;
      wallet_net: number;
      paid_sum: number;
      confirmed: number;
      paid: number;
      drift: number;
    };
  };
  lines: string[];
}

/**
 * The double's control token every sim test runs with (issue 38): each sim path must send it as
 * Bearer, and the double refuses its control API without it.
 */
export const SIM_CONTROL_TOKEN = 'sim-control-token-0123456789abcdef0123456789';

/** Runs `flashpay sim` as a user would, on a fresh database, and returns its exit code and JSON report. */
export async function runSim(
  seed: number,
  flags: string[] = [],
  /** More environment (FLASHPAY_PROVIDER=stripe: the sale pays through that provider's double). */
  extraEnv: Record<string, string> = {},
): Promise<{ code: number | null; report: SimJson; stderr: string }> {
  const db = await freshDatabase({ poolSize: 1 });
  // Small pools: several sales run at once, and a default PostgreSQL allows only 100 connections.
  const env = {
    ...process.env,
    DATABASE_URL: db.url,
    FLASHPAY_POOL_SIZE: '6',
    FLASHPAY_CONTROL_TOKEN: SIM_CONTROL_TOKEN,
    ...extraEnv,
  };
  const child = spawn(process.execPath, [BIN, 'sim', '--seed', String(seed), '--json', ...flags], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  // Graded apart from the sim's own reconciliation (issue 55): the provider's books against the
  // orders table. The sim's in-process double is gone by now; its ledger is `<db>_channel`, the
  // rows its statement (`GET /statement`) is read from. Only for the fake channel: a real
  // provider's double (FLASHPAY_PROVIDER, tests/providers/sim.providers.test.ts) keeps its books in
  // memory and is gone with the sim; PS-01 is graded by the sim's reconciliation alone.
  const fakeChannel = ((env as NodeJS.ProcessEnv).FLASHPAY_PROVIDER || 'fake') === 'fake';
  const ledger = new pg.Client({ connectionString: withDatabase(db.url, `${db.name}_channel`) });
  try {
    if (fakeChannel) {
      await ledger.connect();
      const lines = (
        await ledger.query<StatementLine>('SELECT type, merchant_order, amount::int AS amount FROM channel_lines')
      ).rows;
      expect(lines.length, 'the sale charged somebody').toBeGreaterThan(0);
      expect(await statementAgainstOrders(lines, db.pool), 'the provider statement against the orders table').toEqual(
        [],
      );
    }
  } finally {
    await ledger.end();
    await db.drop();
  }
  if (!out.trim()) throw new Error(`sim printed nothing (exit ${code}):\n${err}`);
  return { code, report: JSON.parse(out) as SimJson, stderr: err };
}

export interface StatementLine {
  type: string;
  merchant_order: string;
  amount: number;
}

/**
 * The provider's statement held against the orders table: each PAID order paid by card has exactly
 * one CHARGE of its amount and no REFUND, a wallet-paid order no CHARGE; every other order as many
 * REFUNDs as CHARGEs; and no line names an order the table does not have. Returns what is wrong.
 */
export async function statementAgainstOrders(lines: StatementLine[], db: Db): Promise<string[]> {
  const orders = (
    await db.query<{ order_id: string; status: string; amount: string; wallet: boolean }>(
      `SELECT o.order_id, o.status, o.amount::text AS amount,
              EXISTS (SELECT 1 FROM wallet_transfers w WHERE w.order_id = o.order_id) AS wallet
         FROM orders o`,
    )
  ).rows;
  const wrong: string[] = [];
  const known = new Set(orders.map((o) => o.order_id));
  for (const line of lines)
    if (!known.has(line.merchant_order)) wrong.push(`${line.type} ${line.merchant_order}: no such order`);
  for (const o of orders) {
    const mine = lines.filter((l) => l.merchant_order === o.order_id);
    const charges = mine.filter((l) => l.type === 'CHARGE');
    const refunds = mine.filter((l) => l.type === 'REFUND').length;
    if (o.status === 'PAID' && o.wallet && charges.length + refunds > 0)
      wrong.push(`${o.order_id}: PAID by wallet with ${charges.length} charges, ${refunds} refunds`);
    if (o.status === 'PAID' && !o.wallet && (charges.length !== 1 || refunds !== 0))
      wrong.push(`${o.order_id}: PAID with ${charges.length} charges, ${refunds} refunds`);
    if (o.status === 'PAID' && !o.wallet && charges.length === 1 && String(charges[0]?.amount) !== o.amount)
      wrong.push(`${o.order_id}: PAID ${o.amount}, charged ${charges[0]?.amount}`);
    if (o.status !== 'PAID' && charges.length !== refunds)
      wrong.push(`${o.order_id}: ${o.status} with ${charges.length} charges, ${refunds} refunds`);
  }
  return wrong;
}
