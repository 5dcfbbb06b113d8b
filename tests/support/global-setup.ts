import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { newClient } from '../../src/platform/pg-primary.ts';
import type { TestProject } from 'vitest/node';
import { startEmbedded, withDatabase, type EmbeddedCluster } from '../../src/platform/embedded.ts';
import { pruneOrphansQuietly, scratchDir } from '../../src/platform/embedded.moved.ts';
import { migrate } from '../../src/platform/migrate.ts';
import { buildDist } from '../../scripts/build-dist.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    serverUrl: string;
    templateDb: string;
  }
}

// One PostgreSQL for the whole run (DATABASE_URL, else a throwaway embedded cluster), one migrated
// template database; every test file clones the template (tests/support/db.ts).
// As root its folder is one the `postgres` user reaches (scratchDir), so it is never moved under
// /var/lib/flashpay; the folder and the cluster go at teardown, even after a failure (issue 56).
let cluster: EmbeddedCluster | undefined;
let clusterDir: string | undefined;
let serverUrl = '';
const templateDb = `flashpay_template_${process.pid}`;

export async function setup(project: TestProject): Promise<void> {
  await childViolations();
  // Every `flashpay` a test spawns boots the compiled copy (bin/dist.js): about 0.6x tsx's boot.
  await buildDist();
  if (process.env.DATABASE_URL) {
    serverUrl = process.env.DATABASE_URL;
  } else {
    clusterDir = await scratchDir('test');
    cluster = await startEmbedded({ dataDir: path.join(clusterDir, 'pg'), persistent: false });
    serverUrl = cluster.url('postgres');
    await unsynced(serverUrl);
  }
  try {
    const admin = newClient(serverUrl);
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${templateDb}`);
    await admin.query(`CREATE DATABASE ${templateDb}`);
    await admin.end();
    await migrate(withDatabase(serverUrl, templateDb));
  } catch (error) {
    await removeCluster();
    throw error;
  }
  project.provide('serverUrl', serverUrl);
  project.provide('templateDb', templateDb);
}

/**
 * The run's own throwaway cluster writes without fsync (issue 49): every test database is dropped
 * at its end, and DROP DATABASE waited 0.7–0.9 s for the disk here (0.04–0.1 s without). The suite
 * kills processes — flashpay's, the postmaster in the restart tests — never the machine, and a
 * killed process loses nothing the kernel already holds, so no test's outcome depends on the flush.
 * COMMIT still waits for its WAL write (synchronous_commit stays on). An external DATABASE_URL is
 * left as it is configured.
 */
async function unsynced(url: string): Promise<void> {
  const admin = newClient(url);
  await admin.connect();
  try {
    await admin.query('ALTER SYSTEM SET fsync = off');
    await admin.query('ALTER SYSTEM SET full_page_writes = off');
    await admin.query('SELECT pg_reload_conf()');
  } finally {
    await admin.end();
  }
}

/** Servers in child processes cannot fail a test; what they logged fails the run here. */
async function childViolations(): Promise<string> {
  const file = process.env.FLASHPAY_CONTRACT_LOG;
  if (!file) return '';
  const text = await readFile(file, 'utf8').catch(() => '');
  await rm(file, { force: true });
  return text;
}

/** The run's own cluster and folder, then whatever test files moved and left (their folders are gone). */
async function removeCluster(): Promise<void> {
  try {
    await cluster?.stop();
  } finally {
    cluster = undefined;
    if (clusterDir) await rm(clusterDir, { recursive: true, force: true });
    clusterDir = undefined;
    await pruneOrphansQuietly((line) => process.stderr.write(`${line}\n`));
  }
}

export async function teardown(): Promise<void> {
  try {
    const violations = await childViolations();
    if (violations)
      throw new Error(`responses in child processes not described by the OpenAPI document:\n${violations}`);
    if (!serverUrl) return;
    const admin = newClient(serverUrl);
    await admin.connect();
    // Drop databases this run left behind (a crashed test file), then the template.
    const leftovers = await admin.query<{ datname: string }>(`SELECT datname FROM pg_database WHERE datname LIKE $1`, [
      `t_${process.pid}_%`,
    ]);
    for (const { datname } of leftovers.rows) await admin.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`);
    await admin.query(`DROP DATABASE IF EXISTS ${templateDb} WITH (FORCE)`);
    await admin.end();
  } finally {
    await removeCluster();
  }
}
