import { reconcile, summaryLine } from '../reconcile/index.ts';
import { parseArgs } from '../platform/args.ts';
import { connectOps } from './ops.ts';

/** `flashpay reconcile [--json]`: exit 0 when nothing mismatches and nothing is pending. */
export async function reconcileCommand(argv: string[]): Promise<void> {
  const args = parseArgs(argv, ['json']);
  const ops = await connectOps();
  try {
    const report = await reconcile(ops.db, ops.payments.channel);
    if (args.flags.has('json')) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else {
      for (const m of report.mismatches)
        process.stdout.write(`mismatch ${m.order_id} ${m.status ?? '-'} ${m.class} ${m.detail}\n`);
      for (const p of report.pending_orders.slice(0, 20)) process.stdout.write(`pending ${p.order_id} ${p.status}\n`);
      process.stdout.write(`${summaryLine(report)}\n`);
    }
    process.exitCode = report.ok ? 0 : 1;
  } finally {
    await ops.close();
  }
}
