import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { isRoot } from '../../src/platform/embedded.binaries.ts';
import { clusterDirFor } from '../../src/platform/embedded.files.ts';
import {
  listMovedClusters,
  markerOf,
  pruneMovedClusters,
  pruneScratchDirs,
  scratchDir,
} from '../../src/platform/embedded.moved.ts';
import { startEmbedded, type EmbeddedCluster } from '../../src/platform/embedded.ts';
import { BIN } from '../support/process.ts';

const run = promisify(execFile);

// Issue 56: as root, a cluster whose folder the postgres user cannot reach (a 0700 mktemp dir, a
// private clone) is moved to /var/lib/flashpay/<hash>/pg, and nothing removed it once its folder
// was gone: 42 orphans, 3.3 GB after a few test runs and benches. Now a moved cluster knows its
// origin and goes when that is gone — never while a postgres process runs in it. Only root moves
// clusters, so there is nothing to test otherwise.
const why = 'needs root: only root moves an embedded cluster to /var/lib/flashpay (issue 56)';

const flashpay = async (args: string[]) => (await run(process.execPath, [BIN, 'embedded', ...args])).stdout;

/** The pid of a process that has exited. */
const deadPid = async () => {
  const child = execFile(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.once('exit', resolve));
  return child.pid!;
};

const selectOne = async (url: string) => {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one;
  } finally {
    await client.end();
  }
};

describe.skipIf(!isRoot())(`moved embedded clusters follow their folder (${isRoot() ? 'as root' : why})`, () => {
  const cleanup: string[] = [];
  let running: EmbeddedCluster | undefined;
  afterAll(async () => {
    await running?.stop();
    for (const dir of cleanup) await rm(dir, { recursive: true, force: true });
  });

  /** A `flashpay start`'s data directory in a fresh private folder (mkdtemp: 0700, like mktemp -d). */
  const privateDataDir = async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'flashpay-moved-'));
    const dataDir = path.join(root, 'clone', '.flashpay', 'pg');
    const moved = path.dirname(clusterDirFor(dataDir, () => undefined));
    cleanup.push(root, moved);
    return { root, dataDir, moved };
  };
  let second: Awaited<ReturnType<typeof privateDataDir>>;

  it('EM-02: a stack started and stopped in a private folder leaves nothing in /var/lib/flashpay once the folder is gone', async () => {
    const first = await privateDataDir();
    const stack = await startEmbedded({ dataDir: first.dataDir, persistent: true });
    await stack.stop();
    // Moved, and knows its origin both ways.
    expect(first.moved.startsWith('/var/lib/flashpay/')).toBe(true);
    expect(JSON.parse(await readFile(path.join(first.moved, 'origin.json'), 'utf8'))).toEqual({
      origin: first.dataDir,
    });
    expect((await readFile(markerOf(first.dataDir), 'utf8')).trim()).toBe(path.join(first.moved, 'pg'));
    await rm(first.root, { recursive: true, force: true });
    // The next start anywhere removes it; its own cluster is in use.
    second = await privateDataDir();
    running = await startEmbedded({ dataDir: second.dataDir, persistent: true });
    expect(existsSync(first.moved)).toBe(false);
    const states = await listMovedClusters();
    expect(states.find((c) => c.dir === second.moved)).toMatchObject({ state: 'running', origin: second.dataDir });
    expect(states.find((c) => c.dir === first.moved)).toBeUndefined();
  }, 120_000);

  it('EM-03: a running cluster whose folder is deleted is never removed; once stopped, prune removes it', async () => {
    const stack = running!;
    await rm(second.root, { recursive: true, force: true });
    expect(await pruneMovedClusters()).not.toContainEqual(expect.objectContaining({ dir: second.moved }));
    const pruned = await flashpay(['prune']);
    expect(pruned).not.toContain(second.moved);
    expect(await selectOne(stack.url('postgres'))).toBe(1);
    const listed = JSON.parse(await flashpay(['list', '--json'])) as Array<Record<string, unknown>>;
    expect(listed.find((c) => c.dir === second.moved)).toMatchObject({
      state: 'running',
      running: true,
      orphaned: false,
      pid: stack.pid(),
      origin: second.dataDir,
    });
    await stack.stop();
    running = undefined;
    // Now an orphan: this prune removes it, unless an embedded start elsewhere (another test file)
    // already did; the command's output for an orphan is EM-04's, in a root of its own.
    await flashpay(['prune']);
    expect(existsSync(second.moved)).toBe(false);
  }, 120_000);

  it('EM-04: unknown origin is kept unless prune --legacy and idle an hour; a recycled pid is not a running postgres', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'flashpay-moved-root-'));
    cleanup.push(root);
    const fake = async (name: string, files: Record<string, string>) => {
      await mkdir(path.join(root, name, 'pg'), { recursive: true });
      for (const [file, text] of Object.entries(files)) await writeFile(path.join(root, name, file), text);
      return path.join(root, name);
    };
    // Moved before origins were recorded: no origin.json.
    const legacy = await fake('0123456789ab', { 'pg/PG_VERSION': '18\n' });
    // Its origin is gone, and its pid file names a live process that is not postgres (this one).
    const recycled = await fake('abcdef012345', {
      'pg/postmaster.pid': `${process.pid}\n`,
      'origin.json': JSON.stringify({ origin: path.join(root, 'gone', 'pg') }),
    });
    const gone = path.join(root, 'gone', 'pg');
    expect((await listMovedClusters({ root })).map((c) => c.state)).toEqual(['unknown origin', 'orphaned']);
    expect(await flashpay(['list', '--root', root])).toMatch(
      new RegExp(
        `^unknown origin\\t\\d+ kB\\t${legacy}\\t\\(moved before origins were recorded\\)\\norphaned\\t\\d+ kB\\t${recycled}\\t${gone}\\n2 moved clusters in ${root}, \\d+ kB; 1 orphaned\\n$`,
      ),
    );
    const listed = JSON.parse(await flashpay(['list', '--json', '--root', root])) as Array<Record<string, unknown>>;
    expect(listed[1]).toMatchObject({ dir: recycled, origin: gone, state: 'orphaned', orphaned: true, running: false });
    expect(await flashpay(['prune', '--root', root])).toMatch(
      new RegExp(
        `^removed\\torphaned\\t\\d+ kB\\t${recycled}\\t${gone}\\nremoved 1 clusters, \\d+ kB; kept 0 running, 0 in use, 1 of unknown origin\\n$`,
      ),
    );
    expect(existsSync(recycled)).toBe(false);
    await flashpay(['prune', '--legacy', '--root', root]);
    expect(existsSync(legacy)).toBe(true); // idle less than an hour: perhaps being made right now
    const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
    for (const dir of [legacy, path.join(legacy, 'pg')]) await utimes(dir, twoHoursAgo, twoHoursAgo);
    expect(await flashpay(['prune', '--root', root])).toMatch(/kept 0 running, 0 in use, 1 of unknown origin/);
    expect(await flashpay(['prune', '--legacy', '--root', root])).toContain(`removed\tunknown origin\t`);
    expect(existsSync(legacy)).toBe(false);
  }, 120_000);

  it('EM-05: the test run and the bench make their throwaway clusters where postgres reaches them (never moved); what a killed run left is swept', async () => {
    const dir = await scratchDir('em05');
    cleanup.push(dir);
    expect(dir.startsWith('/var/tmp/flashpay-em05-')).toBe(true);
    expect((await stat(dir)).mode & 0o777).toBe(0o755);
    expect(clusterDirFor(path.join(dir, 'pg'), () => undefined)).toBe(path.join(dir, 'pg'));
    // One left by a killed run (its owner pid gone, nothing running in it) is swept; a live owner's is not.
    const root = await mkdtemp(path.join(os.tmpdir(), 'flashpay-scratch-root-'));
    cleanup.push(root);
    const make = async (name: string, owner: number) => {
      await mkdir(path.join(root, name, 'pg'), { recursive: true });
      await writeFile(path.join(root, name, 'owner.pid'), `${owner}\n`);
    };
    await make('flashpay-test-AAAAAA', process.pid);
    await make('flashpay-bench-BBBBBB', await deadPid());
    expect(await pruneScratchDirs(root)).toEqual([path.join(root, 'flashpay-bench-BBBBBB')]);
    expect(existsSync(path.join(root, 'flashpay-test-AAAAAA'))).toBe(true);
  });
});
