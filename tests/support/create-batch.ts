import { MAX_ORDER_AMOUNT_MINOR } from '../../src/platform/money.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { keyedDeps } from '../../src/app.deps.ts';
import { requestDigest } from '../../src/idempotency/index.ts';
import { createBatched } from '../../src/orders/create/batch.ts';
import { tokenSigner } from '../../src/platform/auth.ts';
import type { FaultPointName } from '../../src/platform/faultpoints.ts';
import { spawnStart, waitForExit } from './process.ts';
import type { Stack } from './stack.ts';
import { TEST_EVENTS_SECRET, TEST_JWT_SECRET, TEST_NOTIFY_SECRET } from './stack.ts';

// Drivers for the group commit of creates (src/orders/create/batch.ts): a buyer through the batcher
// without HTTP (for tests of thousands of buyers), and the crash driver of its fault point.

/** One one-line create through the batcher, keyed exactly as POST /v1/orders keys it. */
export function buyBatched(stack: Stack, tenantId: string, userId: string, key: string, sku: string, quantity = 1) {
  return createBatched(keyedDeps(stack.deps), {
    principal: { tenantId, userId, scope: 'buyer' },
    line: { sku, quantity },
    scope: { tenantId, userId, operation: 'create_order', key },
    digest: requestDigest('create_order', {}, { sku, quantity }),
    maxAmountMinor: MAX_ORDER_AMOUNT_MINOR,
  });
}

/** Runs `tasks` with at most `width` in flight; results in the tasks' order. */
export async function inFlight<T>(tasks: readonly (() => Promise<T>)[], width: number): Promise<T[]> {
  const results = new Array<T>(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, tasks.length) }, async () => {
      for (let i = next++; i < tasks.length; i = next++) results[i] = await tasks[i]!();
    }),
  );
  return results;
}

export const CREATE_BATCH_FAULT_POINT: FaultPointName = 'create.batch.before-commit';

export interface CreateBatchCrash {
  tenantId: string;
  sku: string;
  /** Buyers (user id, Idempotency-Key) who post at once to the doomed process. */
  buyers: readonly { userId: string; key: string }[];
}

/**
 * The driver of fault point `create.batch.before-commit`: `flashpay start --no-workers` on
 * `databaseUrl` with the point armed, the buyers' creates sent at once, and once a batch has
 * written every row and stopped before its COMMIT the process group is killed with SIGKILL. No
 * buyer got an answer from it. Resolves after the process is gone; the SKU must exist already.
 */
export async function crashCreateBatch(databaseUrl: string, crash: CreateBatchCrash): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-batch-crash-'));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    FLASHPAY_JWT_SECRET: TEST_JWT_SECRET,
    FLASHPAY_NOTIFY_SECRET: TEST_NOTIFY_SECRET,
    FLASHPAY_EVENTS_SECRET: TEST_EVENTS_SECRET,
    FLASHPAY_LOG_LEVEL: 'warn',
    FLASHPAY_FAULTPOINT: CREATE_BATCH_FAULT_POINT,
  };
  const started = await spawnStart(dir, env, ['--no-workers']);
  try {
    let stdout = '';
    const staged = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no STAGE ${CREATE_BATCH_FAULT_POINT} in 30 s`)), 30_000);
      started.child.stdout?.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        if (stdout.includes(`STAGE ${CREATE_BATCH_FAULT_POINT}`)) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    const signer = tokenSigner(TEST_JWT_SECRET);
    // Each post settles as the status it got, or undefined when the connection died unanswered.
    const posts = crash.buyers.map(async (buyer): Promise<number | undefined> => {
      try {
        const token = await signer.sign({ tenantId: crash.tenantId, userId: buyer.userId, scope: 'buyer' });
        const response = await fetch(`${started.api}/v1/orders`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
            'idempotency-key': buyer.key,
          },
          body: JSON.stringify({ sku: crash.sku }),
        });
        return response.status;
      } catch {
        return undefined;
      }
    });
    await staged;
    process.kill(-(started.child.pid ?? 0), 'SIGKILL');
    await waitForExit(started.child);
    const answered = (await Promise.all(posts)).filter((status) => status !== undefined);
    if (answered.length > 0) throw new Error(`${answered.length} buyers were answered before the crash`);
  } finally {
    if (started.child.exitCode === null && started.child.signalCode === null) {
      process.kill(-(started.child.pid ?? 0), 'SIGKILL');
      await waitForExit(started.child);
    }
    await rm(dir, { recursive: true, force: true });
  }
}
