import { listSplitDisagreements, reconcile, reconcilePass, summaryLine } from '../reconcile/index.ts';
import { parseCommand, stringFlag, usageError } from '../platform/args.ts';
import { RECONCILE } from './specs/index.ts';
import { createPool } from '../platform/db.ts';
import { connectOps } from './ops.ts';

/**
 * `flashpay reconcile [--json] [--full | --incremental] [--stock-database-url URL]`: exit 0 when
 * nothing mismatches and nothing is pending. `--full` (the default) reads every order and the whole
 * statement; `--incremental` runs the scheduler's pass: from the stored cursor of what changed, then
 * stores the new one (docs/reconciliation.md, "Incremental passes"). With the stock service on its own database (FLASHPAY_STOCK_SERVICE=separate),
 * the shops never reach it; the operator's run does, and compares the shop's mirrored holds with the
 * stock service's reservations, hold by hold (`--stock-database-url`, or FLASHPAY_STOCK_DATABASE_URL).
 */
export async function reconcileCommand(argv: string[]): Promise<void> {
  const args = parseCommand(RECONCILE, argv);
  if (args.flags.has('full') && args.flags.has('incremental'))
    throw usageError(RECONCILE, '--full and --incremental exclude each other');
  const ops = await connectOps();
  const stockUrl = stringFlag(args, 'stock-database-url') ?? ops.config.stockDatabaseUrl;
  const stockDb = stockUrl ? createPool(stockUrl, 2) : undefined;
  try {
    const report = args.flags.has('incremental')
      ? await reconcilePass(ops.db, ops.payments.channel)
      : await reconcile(ops.db, ops.payments.channel);
    const split = stockDb ? await listSplitDisagreements(ops.db, stockDb) : undefined;
    const ok = report.ok && (split?.length ?? 0) === 0;
    if (args.flags.has('json'))
      process.stdout.write(
        `${JSON.stringify(split ? { ...report, ok, split_disagreements: split } : report, null, 2)}\n`,
      );
    else {
      for (const m of report.mismatches)
        process.stdout.write(`mismatch ${m.order_id} ${m.status ?? '-'} ${m.class} ${m.detail}\n`);
      for (const p of report.pending_orders.slice(0, 20)) process.stdout.write(`pending ${p.order_id} ${p.status}\n`);
      for (const d of split ?? []) process.stdout.write(`split-disagreement ${d.tenant_id} ${d.key} ${d.detail}\n`);
      if (split) process.stdout.write(`stock service: ${split.length} disagreements\n`);
      process.stdout.write(`${summaryLine(report)}\n`);
    }
    process.exitCode = ok ? 0 : 1;
  } finally {
    await stockDb?.end();
    await ops.close();
  }
}
