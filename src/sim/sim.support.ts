import { summaryLine, type ReconciliationReport } from '../reconcile/index.ts';

// What the seeded sale (sim.run.ts) reports, and the small helpers it runs on.

export interface Progress {
  phase: 'buying' | 'competing' | 'converging' | 'done';
  done: number;
  total: number;
}

export interface SimReport {
  seed: number;
  sku: string;
  late_buyers: number;
  late_buyers_won: number;
  final: Record<string, number>;
  notification_effects: Record<string, number>;
  /** The verdict's reconciliation: with `--api`, narrowed to this run's orders. */
  reconciliation: ReconciliationReport;
  /** With `--api`: the whole stack's report, printed but not judged. */
  global_reconciliation?: ReconciliationReport;
  ok: boolean;
  lines: string[];
}

export interface Held {
  id: string;
  notify_id: string;
  merchant_order: string;
  kind: string;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: Math.max(1, concurrency) }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await fn(item);
    }),
  );
}

const format = (counts: Record<string, number>) =>
  `{${Object.entries(counts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')}}`;

/** The sale's report: its outcome counts, the reconciliation, and the three lines the CLI prints. */
export function simReport(run: {
  seed: number;
  sku: string;
  lateBuyers: number;
  lateWon: number;
  wallet: { paid: number; refused: number };
  outcomes: { statuses: Record<string, number>; notification_effects: Record<string, number> };
  reconciliation: ReconciliationReport;
}): SimReport {
  const { outcomes, reconciliation, wallet } = run;
  const walletNote = wallet.paid + wallet.refused > 0 ? ` ; wallet paid ${wallet.paid} refused ${wallet.refused}` : '';
  return {
    seed: run.seed,
    sku: run.sku,
    late_buyers: run.lateBuyers,
    late_buyers_won: run.lateWon,
    final: outcomes.statuses,
    notification_effects: outcomes.notification_effects,
    reconciliation,
    ok: reconciliation.ok,
    lines: [
      `note late buyers ${run.lateWon} ; final ${format(outcomes.statuses)}${walletNote}`,
      `note notification effects ${format(outcomes.notification_effects)}`,
      `note ${summaryLine(reconciliation)}`,
    ],
  };
}
