import { createRelay, createSinkFromConfig, RELAY_DEFAULTS } from '../outbox/index.ts';
import { recoverAll } from '../recovery/index.ts';
import { fulfilmentClient } from '../saga/index.ts';
import { summaryLine } from '../reconcile/index.ts';
import { intFlag, parseCommand } from '../platform/args.ts';
import { RECOVER } from './specs/index.ts';
import { payTimeoutOf } from '../platform/provider.config.ts';
import { connectOps } from './ops.ts';

/** `flashpay recover [--stale-after-ms N] [--json]`: one recovery pass, then the outbox, then reconciliation. */
export async function recoverCommand(argv: string[]): Promise<void> {
  const args = parseCommand(RECOVER, argv);
  // Checked before connecting: `--stale-after-ms abc` is a usage error, not a pass with NaN.
  const staleGiven = intFlag(args, 'stale-after-ms', -1);
  const ops = await connectOps();
  const staleAfterMs = staleGiven >= 0 ? staleGiven : ops.config.staleAfterMs;
  // Events are delivered where `flashpay start` delivers them: its webhook, or the configured broker.
  const sink =
    ops.apiUrl || ops.config.outboxSink !== 'http'
      ? await createSinkFromConfig(ops.config, {
          webhookUrl: `${ops.apiUrl ?? ''}/v1/fulfillment/events`,
          secret: ops.eventsSecret,
        })
      : undefined;
  const relay = sink ? createRelay({ db: ops.db, sink, ...RELAY_DEFAULTS }) : undefined;
  try {
    const saga = {
      db: ops.db,
      clock: ops.payments.clock,
      provider: ops.payments.channel,
      fulfilment: fulfilmentClient(ops.config.fulfilmentUrl ?? ops.channelUrl, payTimeoutOf(ops.config, 'fake')),
      deadlineMs: ops.config.compensationDeadlineMs,
    };
    const report = await recoverAll(ops.payments, { staleAfterMs, relay, reconcile: true, saga });
    if (args.flags.has('json')) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else {
      process.stdout.write(
        `examined ${report.examined}; resolved ${JSON.stringify(report.resolved)}; pending ${report.pending}\n`,
      );
      for (const p of report.still_pending)
        process.stdout.write(`still pending ${p.order_id} ${p.status}: ${p.reason}\n`);
      for (const a of report.needs_attention)
        process.stdout.write(`needs a human ${a.order_id} ${a.status}: ${a.attention}\n`);
      if (report.saga)
        process.stdout.write(
          `saga started ${report.saga.started}, fulfilled ${report.saga.done}, compensated ${report.saga.compensated}, pending ${report.saga.pending.length}\n`,
        );
      if (report.outbox)
        process.stdout.write(`outbox delivered ${report.outbox.delivered}, failed ${report.outbox.failed}\n`);
      if (report.reconciliation) process.stdout.write(`${summaryLine(report.reconciliation)}\n`);
    }
  } finally {
    await sink?.close();
    await ops.close();
  }
}
