import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tokenSigner } from '../../src/platform/auth.ts';
import { eventually } from '../support/payments.ts';
import { spawnStart, waitForExit, type StartedProcess } from '../support/process.ts';

const JWT = 'supervised-test-jwt-secret-of-at-least-32-bytes';

// Proves `flashpay start` supervises its embedded PostgreSQL: a postmaster killed with SIGKILL is
// started again on the same address with its data, the process never exits, and service resumes.
describe('embedded PostgreSQL supervised', () => {
  let dir = '';
  let current: StartedProcess | undefined;
  const env: NodeJS.ProcessEnv = { ...process.env, FLASHPAY_JWT_SECRET: JWT, FLASHPAY_LOG_LEVEL: 'warn' };
  delete env.DATABASE_URL;
  const signer = tokenSigner(JWT);

  afterAll(async () => {
    if (current?.child.pid && current.child.exitCode === null) {
      process.kill(-current.child.pid, 'SIGKILL');
      await waitForExit(current.child);
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('E-01: the postmaster is killed -9; start restarts it and the orders are still there', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-supervised-'));
    await chmod(dir, 0o755);
    const admin = await signer.sign({ tenantId: 'acme', userId: 'ops', scope: 'admin' });
    const buyer = await signer.sign({ tenantId: 'acme', userId: 'alice', scope: 'buyer' });
    current = await spawnStart(dir, env, ['--no-workers']);
    const api = current.api;
    const call = async (method: string, url: string, token: string, body?: unknown, key?: string) => {
      const response = await fetch(`${api}${url}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body ? { 'content-type': 'application/json' } : {}),
          ...(key ? { 'idempotency-key': key } : {}),
        },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(15_000),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    expect(
      (await call('POST', '/v1/admin/skus', admin, { sku: 'tee', name: 'Tee', price: 1990, stock: 5 })).status,
    ).toBe(201);
    const first = await call('POST', '/v1/orders', buyer, { sku: 'tee' }, 'k1');
    expect(first.status).toBe(201);

    const postmaster = Number((await readFile(path.join(dir, '.flashpay/pg/postmaster.pid'), 'utf8')).split('\n')[0]);
    process.kill(postmaster, 'SIGKILL');
    await eventually(
      async () => (await fetch(`${api}/readyz`)).status,
      (status) => status === 503,
      10_000,
    );
    await eventually(
      async () => (await fetch(`${api}/readyz`)).status,
      (status) => status === 200,
      60_000,
    );

    expect(current.child.exitCode).toBeNull();
    expect(current.stderr()).toMatch(/embedded PostgreSQL exited \(SIGKILL\); restarting it/);
    expect((await call('GET', `/v1/orders/${String(first.body.order_id)}`, buyer)).body).toMatchObject({
      status: 'CREATED',
    });
    expect((await call('POST', '/v1/orders', buyer, { sku: 'tee' }, 'k2')).status).toBe(201);
    current.child.kill('SIGTERM');
    expect(await waitForExit(current.child)).toBe(0);
  }, 150_000);
});
