import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tokenSigner } from '../../src/platform/auth.ts';
import { spawnStart, waitForExit, type StartedProcess } from '../support/process.ts';

const JWT = 'crash-test-jwt-secret-of-at-least-32-bytes';

// `flashpay start` on the embedded database, killed with SIGKILL, starts again in the same
// directory with its data intact: no re-initialisation, stale pid file and orphans handled.
describe('flashpay start survives kill -9', () => {
  let dir = '';
  let current: StartedProcess | undefined;
  const env: NodeJS.ProcessEnv = { ...process.env, FLASHPAY_JWT_SECRET: JWT, FLASHPAY_LOG_LEVEL: 'warn' };
  delete env.DATABASE_URL;
  const signer = tokenSigner(JWT);

  afterAll(async () => {
    if (current?.child.pid && current.child.exitCode === null) {
      process.kill(-current.child.pid, 'SIGTERM');
      await waitForExit(current.child);
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const call = async (api: string, method: string, url: string, token: string, body?: unknown, key?: string) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body) headers['content-type'] = 'application/json';
    if (key) headers['idempotency-key'] = key;
    const response = await fetch(`${api}${url}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
    return {
      status: response.status,
      text: await response.text(),
      replayed: response.headers.get('idempotent-replayed'),
    };
  };

  it('keeps orders and idempotent answers across a group kill and a Node-only kill', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'flashpay-crash-'));
    await chmod(dir, 0o755); // a project directory, as `npm start` would see it
    const admin = await signer.sign({ tenantId: 'acme', userId: 'ops', scope: 'admin' });
    const buyer = await signer.sign({ tenantId: 'acme', userId: 'alice', scope: 'buyer' });

    current = await spawnStart(dir, env, ['--no-workers']);
    expect(
      (await call(current.api, 'POST', '/v1/admin/skus', admin, { sku: 'tee', name: 'Tee', price: 1990, stock: 5 }))
        .status,
    ).toBe(201);
    const first = await call(current.api, 'POST', '/v1/orders', buyer, { sku: 'tee' }, 'crash-key');
    expect(first.status).toBe(201);
    const orderId = JSON.parse(first.text).order_id as string;

    // 1. The whole process group (Node and its postmaster) dies at once.
    process.kill(-(current.child.pid ?? 0), 'SIGKILL');
    await waitForExit(current.child);
    current = await spawnStart(dir, env, ['--no-workers']);
    const replay = await call(current.api, 'POST', '/v1/orders', buyer, { sku: 'tee' }, 'crash-key');
    expect(replay).toEqual({ status: 201, text: first.text, replayed: 'true' });

    // 2. Only the Node process dies: its postmaster lives on, orphaned, holding the data directory.
    const postmasterPid = Number(
      (await readFile(path.join(dir, '.flashpay/pg/postmaster.pid'), 'utf8')).split('\n')[0],
    );
    process.kill(current.child.pid ?? 0, 'SIGKILL');
    await waitForExit(current.child);
    expect(() => process.kill(postmasterPid, 0)).not.toThrow();
    current = await spawnStart(dir, env, ['--no-workers']);
    const order = await call(current.api, 'GET', `/v1/orders/${orderId}`, buyer);
    expect(order.status).toBe(200);
    expect(JSON.parse(order.text)).toMatchObject({
      order_id: orderId,
      status: 'CREATED',
      reservation: { status: 'HELD' },
    });
    const sku = JSON.parse((await call(current.api, 'GET', '/v1/admin/skus/tee', admin)).text);
    expect(sku).toMatchObject({ total: 5, available: 4, held: 1 });
    expect(current.stderr()).not.toMatch(/initdb|init script/i);

    process.kill(current.child.pid ?? 0, 'SIGTERM');
    expect(await waitForExit(current.child)).toBe(0);
  }, 180_000);
});
