import { parseCommand, splitSubcommand, stringFlag, UsageError, usageError } from '../platform/args.ts';
import { EMBEDDED, SUBCOMMANDS } from './specs/index.ts';
import {
  formatBytes,
  listMovedClusters,
  MOVED_ROOT,
  pruneMovedClusters,
  type MovedCluster,
} from '../platform/embedded.moved.ts';

const describeLine = (c: MovedCluster) =>
  [
    c.state === 'running' ? `running (pid ${c.pid})` : c.state,
    c.sizeBytes === undefined ? '' : formatBytes(c.sizeBytes),
    c.dir,
    c.origin ?? '(moved before origins were recorded)',
  ].join('\t');

const asJson = (c: MovedCluster) => ({
  dir: c.dir,
  origin: c.origin ?? null,
  state: c.state,
  orphaned: c.state === 'orphaned',
  running: c.state === 'running',
  pid: c.pid ?? null,
  size_bytes: c.sizeBytes ?? null,
  modified_at: c.modifiedAt.toISOString(),
});

/**
 * `flashpay embedded list|prune`: the embedded clusters root moved under /var/lib/flashpay (their
 * folder was out of the `postgres` user's reach), for operators; `flashpay start` prunes orphans itself.
 */
export async function embeddedCommand(argv: string[]): Promise<void> {
  const [sub, own] = splitSubcommand(argv, SUBCOMMANDS.embedded ?? {});
  const spec = sub === undefined ? undefined : SUBCOMMANDS.embedded?.[sub];
  if (!sub || !spec) throw usageError(EMBEDDED, sub ? `unknown command "${sub}": list or prune?` : 'list or prune?');
  // The subcommand's own spec: `prune` takes --legacy, `list` does not.
  const args = parseCommand(spec, own);
  const root = stringFlag(args, 'root') ?? MOVED_ROOT;
  if (args.flags.has('root') && (stringFlag(args, 'root') === undefined || !root.startsWith('/')))
    throw new UsageError('--root takes an absolute directory');
  const json = args.flags.has('json');
  if (sub === 'list') {
    const clusters = await listMovedClusters({ root, withSize: true });
    if (json) process.stdout.write(`${JSON.stringify(clusters.map(asJson), null, 2)}\n`);
    else {
      for (const c of clusters) process.stdout.write(`${describeLine(c)}\n`);
      const total = clusters.reduce((sum, c) => sum + (c.sizeBytes ?? 0), 0);
      const orphans = clusters.filter((c) => c.state === 'orphaned').length;
      process.stdout.write(
        `${clusters.length} moved clusters in ${root}, ${formatBytes(total)}; ${orphans} orphaned\n`,
      );
    }
    return;
  }
  const removed = await pruneMovedClusters({ root, legacy: args.flags.has('legacy') });
  const left = await listMovedClusters({ root });
  const total = removed.reduce((sum, c) => sum + (c.sizeBytes ?? 0), 0);
  if (json) {
    process.stdout.write(`${JSON.stringify({ removed: removed.map(asJson), kept: left.map(asJson) }, null, 2)}\n`);
    return;
  }
  for (const c of removed) process.stdout.write(`removed\t${describeLine(c)}\n`);
  const count = (state: string) => left.filter((c) => c.state === state).length;
  process.stdout.write(
    `removed ${removed.length} clusters, ${formatBytes(total)}; kept ${count('running')} running, ` +
      `${count('in use')} in use, ${count('unknown origin')} of unknown origin\n`,
  );
}
