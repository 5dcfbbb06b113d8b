import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../src/channel/prng.ts';
import { freshDatabase } from '../support/db.ts';
import { BIN, spawnStart, waitForExit, type StartedProcess } from '../support/process.ts';
import { SIM_CONTROL_TOKEN, statementAgainstOrders, type StatementLine } from './run-sim.ts';

const JWT = 'sim-crash-jwt-secret-of-at-least-32-bytes';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

describe('the whole stack killed with kill -9 during a simulated flash sale', () => {
  it('restarts on an external database and the sale still ends with a clean reconciliation', async () => {
    // Proves "nothing is lost" holds across real crashes of every process but the database.
    const db = await freshDatabase({ poolSize: 1 });
    const dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-simcrash-'));
    await chmod(dir, 0o755);
    const [api, channel] = [await freePort(), await freePort()];
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: db.url,
      FLASHPAY_JWT_SECRET: JWT,
      FLASHPAY_NOTIFY_SECRET: 'sim-crash-notify-secret-of-at-least-32-bytes',
      FLASHPAY_LOG_LEVEL: 'error',
      FLASHPAY_RECOVERY_INTERVAL_MS: '500',
      FLASHPAY_STALE_AFTER_MS: '2000',
      FLASHPAY_CONTROL_TOKEN: SIM_CONTROL_TOKEN,
    };
    const start = () => spawnStart(dir, env, ['--port', String(api), '--channel-port', String(channel), '--control']);
    let stack: StartedProcess = await start();
    const sim = spawn(
      process.execPath,
      [BIN, 'sim', '--seed', '13', '--json', '--api', stack.api, '--channel', stack.channel],
      { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    sim.stdout.on('data', (c: Buffer) => (out += c.toString()));
    sim.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const simExit = waitForExit(sim);
    try {
      // Kill at seeded moments while the sale runs: buying, competing, converging.
      const random = mulberry32(13);
      let crashes = 0;
      for (let crash = 0; crash < 3 && sim.exitCode === null; crash++) {
        await Promise.race([new Promise((resolve) => setTimeout(resolve, 700 + random() * 1500)), simExit]);
        if (sim.exitCode !== null) break;
        process.kill(-(stack.child.pid ?? 0), 'SIGKILL');
        await waitForExit(stack.child);
        crashes++;
        stack = await start();
      }
      // docs/architecture.md promises `kill -9` ×3 during the sale: all three, or the test failed
      // to crash what it says it crashed (issue 55: two were accepted).
      expect(crashes).toBe(3);
      const code = await simExit;
      const report = JSON.parse(out) as {
        final: Record<string, number>;
        reconciliation: {
          mismatches: unknown[];
          pending: number;
          totals: { drift: number; paid: number; confirmed: number };
        };
      };
      expect(report.reconciliation.mismatches, err).toEqual([]);
      expect(report.reconciliation.pending).toBe(0);
      expect(report.reconciliation.totals.drift).toBe(0);
      expect(report.reconciliation.totals.paid).toBe(report.reconciliation.totals.confirmed);
      expect(report.final.PAID).toBeLessThanOrEqual(24);
      expect(code).toBe(0);
      // Graded apart from the sim's own reconciliation: the running double's statement against the orders table.
      const statement = await fetch(`${stack.channel}/statement`, {
        headers: { authorization: `Bearer ${SIM_CONTROL_TOKEN}` },
      });
      expect(statement.status).toBe(200);
      const { lines } = (await statement.json()) as { lines: StatementLine[] };
      expect(lines.length).toBeGreaterThan(0);
      expect(await statementAgainstOrders(lines, db.pool)).toEqual([]);
    } finally {
      if (sim.exitCode === null) sim.kill('SIGKILL');
      if (stack.child.exitCode === null) {
        process.kill(-(stack.child.pid ?? 0), 'SIGTERM');
        await waitForExit(stack.child);
      }
      await db.drop();
      await rm(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
