import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { tokenSigner } from '../../src/platform/auth.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { spawnStart, waitForExit, type StartedProcess } from '../support/process.ts';

// A real `flashpay start --port 0 --control` on a fresh database, as an integrator runs it, with
// secrets the test knows (to sign tokens and check the relay's signatures).
export const LIVE_JWT_SECRET = 'live-stack-jwt-secret-of-at-least-32-bytes';
export const LIVE_NOTIFY_SECRET = 'live-stack-notify-secret-at-least-32-bytes';
export const LIVE_EVENTS_SECRET = 'live-stack-events-secret-at-least-32-bytes';

export interface LiveStack extends StartedProcess {
  dir: string;
  env: NodeJS.ProcessEnv;
  database: TestDatabase;
  token(tenant: string, user: string, scope?: 'buyer' | 'admin' | 'operator'): Promise<string>;
  stop(): Promise<void>;
}

export async function startLiveStack(
  options: { args?: string[]; env?: NodeJS.ProcessEnv; prefix?: string } = {},
): Promise<LiveStack> {
  const dir = await mkdtemp(path.join(os.tmpdir(), options.prefix ?? 'flashpay-live-'));
  await chmod(dir, 0o755);
  const database = await freshDatabase({ poolSize: 4 });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: database.url,
    FLASHPAY_DATA_DIR: path.join(dir, '.flashpay'),
    FLASHPAY_JWT_SECRET: LIVE_JWT_SECRET,
    FLASHPAY_NOTIFY_SECRET: LIVE_NOTIFY_SECRET,
    FLASHPAY_EVENTS_SECRET: LIVE_EVENTS_SECRET,
    FLASHPAY_LOG_LEVEL: 'warn',
    ...options.env,
  };
  const started = await spawnStart(dir, env, options.args ?? ['--control']);
  const signer = tokenSigner(LIVE_JWT_SECRET);
  return {
    ...started,
    dir,
    env,
    database,
    token: (tenant, user, scope = 'buyer') => signer.sign({ tenantId: tenant, userId: user, scope }),
    async stop() {
      if (started.child.pid && started.child.exitCode === null) {
        process.kill(-started.child.pid, 'SIGTERM');
        await waitForExit(started.child);
      }
      await database.drop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
