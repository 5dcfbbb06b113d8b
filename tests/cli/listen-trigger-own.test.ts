import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { constructEvent, type OrderEvent } from 'flashpay/client';
import { BIN, callApi, waitForExit } from '../support/process.ts';
import { waitFor } from '../support/poll.ts';
import { LIVE_EVENTS_SECRET, startLiveStack, type LiveStack } from './live-stack.ts';

// Issue 52, as a newcomer meets `listen`, `trigger` and `token --console` beside a running
// `flashpay start --control`: listen refuses without a stack (never a database of its own), says
// what signs its forwards, follows a stack elsewhere with --api, and resends a failed forward;
// trigger makes its own order when --order is left out, and lost-reply gives the UNKNOWN it names.

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runCli(cwd: string, env: NodeJS.ProcessEnv, args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A `flashpay listen` left running, read as it prints; stopped by SIGTERM. */
async function startListen(cwd: string, env: NodeJS.ProcessEnv, args: string[]) {
  const child: ChildProcess = spawn(process.execPath, [BIN, 'listen', ...args], { cwd, env, detached: true });
  const out = { stdout: '', stderr: '' };
  child.stdout?.on('data', (c: Buffer) => (out.stdout += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (out.stderr += c.toString()));
  await waitFor(
    async () => out.stderr.includes('following delivered events') || child.exitCode !== null,
    'listen ready',
    60_000,
  );
  return {
    out,
    async stop() {
      if (child.pid && child.exitCode === null) process.kill(-child.pid, 'SIGTERM');
      return waitForExit(child);
    },
  };
}

/** A webhook receiver that answers 500 until told otherwise, and keeps what it verified. */
async function receiver() {
  const state = { failing: true, received: [] as OrderEvent[] };
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (c: Buffer) => (body += c.toString()));
    request.on('end', () => {
      if (state.failing) {
        response.statusCode = 500;
        return response.end();
      }
      state.received.push(constructEvent(body, request.headers['flashpay-signature'] as string, LIVE_EVENTS_SECRET));
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/hooks`;
  return { state, url, close: () => new Promise((resolve) => server.close(resolve)) };
}

function envWithout(env: NodeJS.ProcessEnv, ...names: string[]): NodeJS.ProcessEnv {
  const copy = { ...env };
  for (const name of names) delete copy[name];
  return copy;
}

describe('listen, trigger and token --console beside a running stack (LO, TO, TK; issue 52)', () => {
  let stack: LiveStack;
  let adminToken = '';
  let elsewhere = '';
  beforeAll(async () => {
    stack = await startLiveStack({ prefix: 'flashpay-lo-' });
    adminToken = await stack.token('acme', 'ops', 'admin');
    elsewhere = await mkdtemp(path.join(os.tmpdir(), 'flashpay-lo-elsewhere-'));
    const sku = await callApi(stack.api, 'POST', '/v1/admin/skus', adminToken, {
      sku: 'lo-tee',
      name: 'lo-tee',
      price: 1990,
      stock: 20,
    });
    expect(sku.status).toBe(201);
  });
  afterAll(async () => {
    await stack?.stop();
    await rm(elsewhere, { recursive: true, force: true });
  });

  const view = async (id: string) => (await callApi(stack.api, 'GET', `/v1/admin/orders/${id}`, adminToken)).body;
  const paidOrder = async (user: string) => {
    const token = await stack.token('acme', user);
    const created = await callApi(stack.api, 'POST', '/v1/orders', token, { sku: 'lo-tee' }, randomUUID());
    const id = created.body.order_id as string;
    const paid = await callApi(stack.api, 'POST', `/v1/orders/${id}/pay`, token, {}, randomUUID());
    expect([created.status, paid.body.status]).toEqual([201, 'PAID']);
    return id;
  };

  it('LO-01: with no stack in reach listen exits 2 with what to do, and starts no database of its own', async () => {
    const env = { ...envWithout(process.env, 'DATABASE_URL'), FLASHPAY_DATA_DIR: path.join(elsewhere, '.flashpay') };
    const none = await runCli(elsewhere, env, ['listen']);
    expect([none.code, none.stdout]).toEqual([2, '']);
    expect(none.stderr).toMatch(/no stack in reach: run `flashpay start`.*DATABASE_URL.*never starts a database/s);
    // A port nobody listens on: out of reach.
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const gone = await runCli(elsewhere, env, ['listen', '--api', `http://127.0.0.1:${port}`]);
    expect([gone.code, gone.stderr]).toEqual([2, expect.stringMatching(/^flashpay listen|no stack in reach at/)]);
    expect(gone.stderr).toContain(`no stack in reach at http://127.0.0.1:${port}`);
    // The stack answers at --api, but its events are in its database, which this directory does not know.
    const unknownDb = await runCli(elsewhere, env, ['listen', '--api', stack.api]);
    expect([unknownDb.code, unknownDb.stderr]).toEqual([2, expect.stringContaining('set DATABASE_URL')]);
    expect(await readdir(elsewhere)).toEqual([]); // no .flashpay/pg, no secret: nothing was started or made
  }, 120_000);

  it('LO-02: listen says what signs its forwards: the variable, or the development default by its path', async () => {
    const named = await startListen(stack.dir, stack.env, ['--forward-to', 'http://127.0.0.1:9/x']);
    expect(await named.stop()).toBe(0);
    expect(named.out.stderr).toContain('signing forwards with FLASHPAY_EVENTS_SECRET');
    const fallback = await startListen(stack.dir, envWithout(stack.env, 'FLASHPAY_EVENTS_SECRET'), [
      '--forward-to',
      'http://127.0.0.1:9/x',
    ]);
    expect(await fallback.stop()).toBe(0);
    expect(fallback.out.stderr).toContain(
      `signing forwards with the DEVELOPMENT DEFAULT in ${path.join(stack.dir, '.flashpay', 'events.secret')}`,
    );
    const unsigned = await startListen(stack.dir, stack.env, []);
    expect(await unsigned.stop()).toBe(0);
    expect(unsigned.out.stderr).toContain('not forwarding (no --forward-to): nothing is signed');
  }, 120_000);

  it('LO-03: a forward that failed is printed with its resend command; --resend sends that event again, signed', async () => {
    const hooks = await receiver();
    try {
      const listen = await startListen(stack.dir, stack.env, [
        '--json',
        '--events',
        'ORDER_PAID',
        '--forward-to',
        hooks.url,
      ]);
      const orderId = await paidOrder('lo-ann');
      const printed = await waitFor(
        async () =>
          listen.out.stdout
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l) as OrderEvent & { forwarded: string })
            .find((e) => e.order_id === orderId),
        'the failed forward printed',
        30_000,
      );
      expect(await listen.stop()).toBe(0);
      const hint = `resend: flashpay listen --resend ${printed.event_id} --forward-to ${hooks.url}`;
      expect(printed.forwarded).toMatch(/^failed: /);
      expect(printed.forwarded).toContain(hint);
      expect(hooks.state.received).toEqual([]);

      hooks.state.failing = false;
      const again = await runCli(
        stack.dir,
        stack.env,
        hint.slice('resend: flashpay '.length).split(' ').concat('--json'),
      );
      expect([again.code, JSON.parse(again.stdout)]).toEqual([
        0,
        expect.objectContaining({ event_id: printed.event_id, order_id: orderId, forwarded: 'ok' }),
      ]);
      expect(hooks.state.received.map((e) => [e.event_id, e.order_id, e.event_type])).toEqual([
        [printed.event_id, orderId, 'ORDER_PAID'],
      ]);
      const missing = await runCli(stack.dir, stack.env, [
        'listen',
        '--resend',
        '987654321',
        '--forward-to',
        hooks.url,
      ]);
      expect([missing.code, missing.stderr]).toEqual([1, expect.stringContaining('no delivered event 987654321')]);
    } finally {
      await hooks.close();
    }
  }, 180_000);

  it('LO-04: --api follows a stack started elsewhere, reading its database from DATABASE_URL', async () => {
    const env = { ...stack.env, FLASHPAY_DATA_DIR: path.join(elsewhere, '.flashpay') };
    const listen = await startListen(elsewhere, env, ['--api', stack.api, '--json']);
    try {
      expect(listen.out.stderr).toContain(`following delivered events of the stack at ${stack.api}`);
      const orderId = await paidOrder('lo-bea');
      await waitFor(async () => listen.out.stdout.includes(orderId), 'the event followed', 30_000);
    } finally {
      expect(await listen.stop()).toBe(0);
    }
  }, 120_000);

  it('TO-01: trigger lost-reply without --order makes its own order whose pay answers UNKNOWN; recovery makes it PAID, charged once', async () => {
    const r = await runCli(stack.dir, stack.env, ['trigger', 'lost-reply', '--json']);
    expect([r.code, r.stderr]).toEqual([0, '']);
    const done = JSON.parse(r.stdout) as {
      order_id: string;
      made: { sku: string; buyer: string; tenant: string };
      pay_answered: string;
      status: string;
    };
    expect(done.made).toEqual({
      sku: expect.stringMatching(/^trigger-lost-reply-/),
      buyer: 'trigger-buyer',
      tenant: 'acme',
    });
    expect([done.pay_answered, done.status]).toEqual(['UNKNOWN', 'UNKNOWN']);
    const order = await view(done.order_id);
    expect([order.status, order.user_id ?? order.buyer]).toEqual(['UNKNOWN', 'trigger-buyer']);
    const statement = await (await fetch(`${stack.channel}/charges/${done.order_id}`)).json();
    expect(statement.status).toBe('CHARGED'); // the money moved: only the answer was lost
    // The notification stays held, so it is recovery's query that settles it.
    const recovered = await runCli(stack.dir, stack.env, ['recover', '--stale-after-ms', '0', '--json']);
    expect(recovered.code, recovered.stderr).toBe(0);
    expect((await view(done.order_id)).status).toBe('PAID');
    const requests = await (await fetch(`${stack.channel}/_control/requests`)).json();
    expect(requests.charge.by_order[done.order_id]).toBe(1);
    // The channel's callbacks are back as they were.
    expect((await (await fetch(`${stack.channel}/_control/callbacks`)).json()).mode).not.toBe('HOLD');
  }, 120_000);

  it('TO-02: every other kind without --order acts on an order of its own, with the outcome its message names', async () => {
    const trigger = async (what: string) => {
      const r = await runCli(stack.dir, stack.env, ['trigger', what, '--json']);
      expect([what, r.code, r.stderr]).toEqual([what, 0, '']);
      const done = JSON.parse(r.stdout) as {
        order_id: string;
        made: { sku: string };
        pay_answered?: string;
        provider: { status?: string };
      };
      expect(done.made.sku).toMatch(new RegExp(`^trigger-${what}-`));
      return done;
    };
    const settles = (id: string, status: string) =>
      waitFor(async () => ((await view(id)).status === status ? true : undefined), `${id} ${status}`, 30_000);

    await settles((await trigger('charged')).order_id, 'PAID');
    expect((await trigger('declined')).pay_answered).toBe('FAILED');
    await settles((await trigger('refunded')).order_id, 'REFUNDED');
    // The same notify_id again is answered from its record; a late copy under a new one is recorded, changing nothing.
    const duplicate = await trigger('duplicate-callback');
    expect([duplicate.provider.status, (await view(duplicate.order_id)).status]).toEqual(['DELIVERED', 'PAID']);
    const late = await trigger('late-callback');
    const seen = await waitFor(
      async () => {
        const v = await view(late.order_id);
        return v.notifications.length >= 2 ? v : undefined;
      },
      'the late copy recorded',
      30_000,
    );
    expect([seen.status, seen.notifications.map((n: { effect: string }) => n.effect).sort()]).toEqual([
      'PAID',
      ['DUPLICATE', 'PAID'],
    ]);

    // The human form names the order it made, what can happen, and where it is now.
    const human = await runCli(stack.dir, stack.env, ['trigger', 'charged']);
    expect(human.stdout).toMatch(
      /^made order (ord_\S+) to act on \(SKU trigger-charged-\w+, buyer trigger-buyer, tenant acme\)\ncharged \1: the provider charges the order now.*\n\1 is [A-Z]+ now\n$/,
    );
  }, 240_000);

  it('TK-01: token --console links to the running stack’s address, not a fixed :8080', async () => {
    const env = envWithout(stack.env, 'FLASHPAY_PUBLIC_URL', 'FLASHPAY_PORT');
    const link = await runCli(stack.dir, env, ['token', '--tenant', 'acme', '--user', 'ops', '--console']);
    expect([link.code, link.stdout]).toEqual([0, expect.stringMatching(new RegExp(`^${stack.api}/ops#token=ey`))]);
    expect(stack.api).not.toMatch(/:8080$/);
    // The control: a directory with no running stack gets the configured port's address.
    const other = await runCli(elsewhere, { ...env, FLASHPAY_DATA_DIR: path.join(elsewhere, 'tk') }, [
      'token',
      '--tenant',
      'acme',
      '--user',
      'ops',
      '--console',
    ]);
    expect(other.stdout).toMatch(/^http:\/\/127\.0\.0\.1:8080\/ops#token=/);
  }, 60_000);
});
