// The real system the model-based tests drive: one database, one fake channel on real HTTP and one
// order API per test file, reused by every run (each run gets its own tenant, SKUs and buyers, so
// runs are cheap and cannot see each other). "Crash-restart" is in process: the pay in flight is
// parked for good at the `pay.after-charge` fault point, and a new app (new deps, new port) takes
// over the same database and channel, as a restarted process would.
import { armFaultPoint } from '../../src/platform/faultpoints.ts';
import { ManualClock } from '../../src/platform/clock.ts';
import { paymentDeps } from '../../src/payments/payments.routes.ts';
import { recoverAll } from '../../src/recovery/recovery.full.ts';
import { sagaDeps } from '../../src/recovery/recovery.saga.ts';
import { startChannel, type RunningChannel } from '../../src/channel/index.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { startStack, TEST_NOTIFY_SECRET, type HttpResult, type Stack } from '../support/stack.ts';

/** Short enough that a lost reply costs little per run, long enough for a loaded 2-core box. */
export const PAY_TIMEOUT_MS = 250;

export interface World {
  db: TestDatabase;
  channel: RunningChannel;
  clock: ManualClock;
  app: Stack;
  restarts: number;
  control(method: string, path: string, body?: unknown): Promise<unknown>;
  call(
    method: string,
    path: string,
    options?: { token?: string; body?: unknown; headers?: Record<string, string> },
  ): Promise<HttpResult>;
  token(tenant: string, user: string, scope?: 'buyer' | 'admin' | 'operator'): Promise<string>;
  recover(): Promise<void>;
  drain(): Promise<void>;
  /** Parks the next pay after its charge (the process "dies" there); resolves once one is parked. */
  parkNextPay(): Promise<void>;
  /** Withdraws parkNextPay when the pay was answered before reaching the provider. */
  unpark(): void;
  /** A new app on the same database and channel; the old one is dropped with what it had in flight. */
  crashRestart(): Promise<void>;
  close(): Promise<void>;
}

export async function startWorld(): Promise<World> {
  const db = await freshDatabase({ poolSize: 12 });
  const clock = new ManualClock();
  const channel = await startChannel({
    notifySecret: TEST_NOTIFY_SECRET,
    control: true,
    notifyRetryBaseMs: 10,
    notifyMaxAttempts: 3,
  });
  const config = { payTimeoutMs: PAY_TIMEOUT_MS };
  const open = () => startStack({ db, clock, channelUrl: channel.url, config });
  let parking: (() => void) | undefined;
  const disarm = armFaultPoint('pay.after-charge', async () => {
    const parked = parking;
    if (!parked) return;
    parking = undefined;
    parked();
    await new Promise<never>(() => undefined); // this pay never returns: its process is gone
  });
  const control = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${channel.url}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status >= 400) throw new Error(`channel ${method} ${path}: ${response.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  // Every notification is held until a command delivers it, and comes in two copies.
  await control('POST', '/_control/callbacks', { mode: 'HOLD', duplicates: 2 });

  const world: World = {
    db,
    channel,
    clock,
    app: await open(),
    restarts: 0,
    control,
    call: (method, path, options) => world.app.call(method, path, options),
    token: (tenant, user, scope = 'buyer') => world.app.token(tenant, user, scope),
    async recover() {
      const deps = world.app.deps;
      await recoverAll(paymentDeps(deps), {
        staleAfterMs: 0,
        relay: deps.relay,
        reconcile: false,
        saga: sagaDeps(deps),
      });
    },
    async drain() {
      await world.app.deps.relay?.drain({ force: true });
    },
    parkNextPay: () => new Promise<void>((resolve) => (parking = resolve)),
    unpark: () => (parking = undefined),
    async crashRestart() {
      const old = world.app;
      world.app = await open();
      world.restarts++;
      // The old process is gone: its sockets are cut, whatever it had in flight never answers.
      await old.deps.relay?.stop();
      const closing = old.app.close();
      old.app.server.closeAllConnections();
      await closing;
    },
    async close() {
      disarm();
      await world.app.close();
      await channel.close();
      await db.drop();
    },
  };
  return world;
}
