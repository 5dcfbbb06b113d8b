import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { newClient } from '../../src/platform/pg-primary.ts';
import type { TestProject } from 'vitest/node';
import { startEmbedded, withDatabase, type EmbeddedCluster } from '../../src/platform/embedded.ts';
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
let cluster: EmbeddedCluster | undefined;
let serverUrl = '';
const templateDb = `flashpay_template_${process.pid}`;

export async function setup(project: TestProject): Promise<void> {
  await childViolations();
  // Every `flashpay` a test spawns boots the compiled copy (bin/dist.js): about 0.6x tsx's boot.
  await buildDist();
  if (process.env.DATABASE_URL) {
    serverUrl = process.env.DATABASE_URL;
  } else {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-test-'));
    cluster = await startEmbedded({ dataDir: path.join(dir, 'pg'), persistent: false });
    serverUrl = cluster.url('postgres');
  }
  const admin = newClient(serverUrl);
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${templateDb}`);
  await admin.query(`CREATE DATABASE ${templateDb}`);
  await admin.end();
  await migrate(withDatabase(serverUrl, templateDb));
  project.provide('serverUrl', serverUrl);
  project.provide('templateDb', templateDb);
}

/** Servers in child processes cannot fail a test; what they logged fails the run here. */
async function childViolations(): Promise<string> {
  const file = process.env.FLASHPAY_CONTRACT_LOG;
  if (!file) return '';
  const text = await readFile(file, 'utf8').catch(() => '');
  await rm(file, { force: true });
  return text;
}

export async function teardown(): Promise<void> {
  const violations = await childViolations();
  if (violations) throw new Error(`responses in child processes not described by the OpenAPI document:\n${violations}`);
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
  await cluster?.stop();
}
