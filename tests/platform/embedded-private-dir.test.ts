import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startEmbedded } from '../../src/platform/embedded.ts';
import { clusterDirFor, passwordFileOf } from '../../src/platform/embedded.files.ts';

// `npm start` in a fresh clone under a private directory (mktemp -d is 0700): as root, the postgres
// user cannot reach `.flashpay/pg`, so the cluster lives under /var/lib/flashpay instead, and its
// password is still kept beside the asked-for directory, which nothing had created yet. That write
// failed with ENOENT and `flashpay start` exited before serving anything.
describe('embedded PostgreSQL under a directory that does not exist yet', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it('EM-01 starts, keeps its password beside the asked-for directory, and starts again with it', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'flashpay-private-')); // 0700, like mktemp -d
    const dataDir = path.join(root, 'checkout', '.flashpay', 'pg');
    dirs.push(root, path.dirname(clusterDirFor(dataDir, () => undefined)));
    const selectOne = async (url: string) => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        return (await client.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one;
      } finally {
        await client.end();
      }
    };
    const first = await startEmbedded({ dataDir, persistent: true });
    try {
      expect(await selectOne(first.url('postgres'))).toBe(1);
    } finally {
      await first.stop();
    }
    const password = (await readFile(passwordFileOf(dataDir), 'utf8')).trim();
    expect(password.length).toBeGreaterThan(20);
    const again = await startEmbedded({ dataDir, persistent: true });
    try {
      expect(again.url('postgres')).toContain(encodeURIComponent(password));
      expect(await selectOne(again.url('postgres'))).toBe(1);
    } finally {
      await again.stop();
    }
  }, 120_000);
});
