import { backoffDelayMs } from '../platform/backoff.ts';
import { setMaxListeners } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import { AppError } from '../platform/errors.ts';
import { SIGNATURE_HEADER, signPayload } from '../platform/signature.ts';
import { httpRequest } from '../platform/http.client.ts';
import { newId, type NotifyKind } from './ledger.ts';
import { drawBetween, mulberry32 } from './prng.ts';
import type { OutgoingNotification, WireNotification } from './wire.ts';

// Limits, each with its reason.
/** A receiver slower than this is treated as a failed attempt, and retried. */
const ATTEMPT_TIMEOUT_MS = 5_000;
/** Exponential backoff stops growing here, so a long outage is still retried at a sane pace. */
const MAX_BACKOFF_MS = 60_000;
/** Finished notifications beyond this are forgotten oldest first, so a long run stays bounded. */
const MAX_TRACKED_NOTIFICATIONS = 10_000;
/** Fixed so that a run that never sets a seed is still repeatable. */
export const DEFAULT_SEED = 20_240_229;

export type DeliveryStatus = 'HELD' | 'PENDING' | 'DELIVERED' | 'GIVEN_UP';

export interface NotificationEvent {
  kind: NotifyKind;
  merchantOrder: string;
  amount: number;
  txn: string;
  notifyUrl: string;
  /** Set only to resend an earlier notification under its own id. */
  notifyId?: string;
}

interface Delivery {
  status: DeliveryStatus;
  attempts: number;
  lastError: string | null;
}

interface Notification extends Required<NotificationEvent> {
  body: string;
  headers: () => Record<string, string>;
  deliveries: Delivery[];
}

export interface CallbackSettings {
  mode: 'AUTO' | 'HOLD';
  duplicates: number;
  delayMs: [number, number];
  seed: number;
}

export interface RetrySettings {
  retryBaseMs: number;
  maxAttempts: number;
}

const DEFAULT_CALLBACKS: CallbackSettings = { mode: 'AUTO', duplicates: 1, delayMs: [0, 0], seed: DEFAULT_SEED };

/** Every delivery in flight listens on one signal; hundreds at once is expected, not a leak. */
export function unboundedController(): AbortController {
  const controller = new AbortController();
  setMaxListeners(0, controller.signal);
  return controller;
}

function overall(deliveries: Delivery[]): DeliveryStatus {
  for (const status of ['PENDING', 'HELD', 'DELIVERED'] as const)
    if (deliveries.some((d) => d.status === status)) return status;
  return 'GIVEN_UP';
}

export function describeNotification(n: Notification): Record<string, unknown> {
  return {
    notify_id: n.notifyId,
    merchant_order: n.merchantOrder,
    kind: n.kind,
    amount: n.amount,
    txn: n.txn,
    notify_url: n.notifyUrl,
    status: overall(n.deliveries),
    attempts: n.deliveries.reduce((sum, d) => sum + d.attempts, 0),
    copies: n.deliveries.map((d) => ({ status: d.status, attempts: d.attempts, last_error: d.lastError })),
  };
}

/**
 * Delivers signed notifications asynchronously: the charge reply never waits for them. Each copy
 * (duplicates) is retried with exponential backoff until a 2xx or the attempt bound. Everything
 * in flight hangs off one AbortController, so reset and shutdown cancel it all at once.
 */
export class Notifier {
  private notifications = new Map<string, Notification>();
  private held: { id: string; notification: Notification; delivery: Delivery }[] = [];
  private callbacks: CallbackSettings = { ...DEFAULT_CALLBACKS };
  private random = mulberry32(DEFAULT_SEED);
  private retry: RetrySettings;
  private abort = unboundedController();
  private readonly running = new Set<Promise<void>>();
  private nextHeldId = 1;

  constructor(
    private readonly secret: string,
    private readonly defaults: RetrySettings,
    private readonly log: (message: string) => void,
    /** Puts a notification in a provider's words (dialect.ts); the fake channel's own by default. */
    private readonly format: (n: OutgoingNotification) => WireNotification = (n) => this.fakeChannelWire(n),
  ) {
    this.retry = { ...defaults };
  }

  /** A new notification after a ledger change: held, or sent after the configured delay. */
  enqueue(event: NotificationEvent): void {
    if (this.abort.signal.aborted) return;
    const n = this.track(event, this.callbacks.duplicates);
    for (const delivery of n.deliveries) {
      if (this.callbacks.mode === 'HOLD') {
        delivery.status = 'HELD';
        this.held.push({ id: `held_${this.nextHeldId++}`, notification: n, delivery });
        continue;
      }
      // Drawn now, in commit order, so a seeded run draws the same delays for the same charges.
      const waitMs = drawBetween(this.random, this.callbacks.delayMs[0], this.callbacks.delayMs[1]);
      const signal = this.abort.signal;
      this.background(async () => {
        if (waitMs > 0) await delay(waitMs, undefined, { signal });
        await this.start(n, delivery);
      });
    }
  }

  /** Sends one notification now, bypassing HOLD and delays; resolves after its first attempt. */
  async sendNow(event: NotificationEvent): Promise<Record<string, unknown>> {
    const n = this.track(event, 1);
    const [delivery] = n.deliveries;
    if (delivery) await this.start(n, delivery);
    return describeNotification(n);
  }

  /** Delivers held copies in exactly the given order: each first attempt ends before the next. */
  async release(ids: string[]): Promise<void> {
    const chosen = ids.map((id) => this.held.find((entry) => entry.id === id));
    const missing = ids.filter((_, i) => chosen[i] === undefined);
    if (missing.length > 0) throw new AppError('VALIDATION', `not held: ${missing.join(', ')}`);
    if (new Set(ids).size !== ids.length) throw new AppError('VALIDATION', 'ids must not repeat');
    this.held = this.held.filter((entry) => !ids.includes(entry.id));
    for (const entry of chosen) if (entry) await this.start(entry.notification, entry.delivery);
  }

  heldList(): Record<string, unknown>[] {
    return this.held.map(({ id, notification: n }) => ({
      id,
      notify_id: n.notifyId,
      merchant_order: n.merchantOrder,
      kind: n.kind,
      amount: n.amount,
      txn: n.txn,
    }));
  }

  list(): Record<string, unknown>[] {
    return [...this.notifications.values()].map(describeNotification);
  }

  setCallbacks(settings: CallbackSettings): void {
    this.callbacks = { ...settings, delayMs: [...settings.delayMs] };
    this.random = mulberry32(settings.seed);
  }

  getCallbacks(): CallbackSettings {
    return { ...this.callbacks, delayMs: [...this.callbacks.delayMs] };
  }

  setRetry(settings: Partial<RetrySettings>): RetrySettings {
    this.retry = { ...this.retry, ...settings };
    return { ...this.retry };
  }

  getRetry(): RetrySettings {
    return { ...this.retry };
  }

  /** Cancels every delivery in flight and forgets every notification and setting. */
  async reset(): Promise<void> {
    await this.cancelAll();
    this.abort = unboundedController();
    this.notifications.clear();
    this.held = [];
    this.setCallbacks(DEFAULT_CALLBACKS);
    this.retry = { ...this.defaults };
  }

  async stop(): Promise<void> {
    await this.cancelAll();
  }

  private async cancelAll(): Promise<void> {
    this.abort.abort();
    await Promise.allSettled([...this.running]);
  }

  private track(event: NotificationEvent, copies: number): Notification {
    const notifyId = event.notifyId ?? newId('ntf');
    const { body, headers } = this.format({ ...event, notifyId });
    const deliveries = Array.from({ length: copies }, (): Delivery => ({
      status: 'PENDING',
      attempts: 0,
      lastError: null,
    }));
    const n: Notification = { ...event, notifyId, body, headers, deliveries };
    // A resend under an existing id is a separate record; keyed so both stay visible.
    this.notifications.set(this.notifications.has(notifyId) ? `${notifyId}#${newId('ntf')}` : notifyId, n);
    this.forgetOldest();
    return n;
  }

  private fakeChannelWire(n: OutgoingNotification): WireNotification {
    const body = JSON.stringify({
      notify_id: n.notifyId,
      merchant_order: n.merchantOrder,
      kind: n.kind,
      amount: n.amount,
      txn: n.txn,
    });
    return {
      body,
      headers: () => ({ 'content-type': 'application/json', [SIGNATURE_HEADER]: signPayload(this.secret, body) }),
    };
  }

  private forgetOldest(): void {
    if (this.notifications.size <= MAX_TRACKED_NOTIFICATIONS) return;
    for (const [key, n] of this.notifications) {
      const status = overall(n.deliveries);
      if (status === 'DELIVERED' || status === 'GIVEN_UP') {
        this.notifications.delete(key);
        return;
      }
    }
  }

  private background(work: () => Promise<void>): void {
    const running = work().catch((error: unknown) => {
      if ((error as Error).name !== 'AbortError') this.log(`notifier: ${(error as Error).message}`);
    });
    this.running.add(running);
    void running.finally(() => this.running.delete(running));
  }

  /** The first attempt, awaited; later attempts continue in the background. */
  private async start(n: Notification, delivery: Delivery): Promise<void> {
    // Captured once: a reset during this attempt must cancel its retries too.
    const signal = this.abort.signal;
    // A provider double with no webhook endpoint registered (issue 37) has nowhere to send: the
    // notification is kept (visible in /_control) and nothing goes on the wire.
    if (n.notifyUrl === '') {
      delivery.status = 'GIVEN_UP';
      delivery.lastError = 'no webhook endpoint registered';
      return;
    }
    delivery.status = 'PENDING';
    if (await this.attempt(n, delivery, signal)) return;
    this.background(() => this.retryUntilDone(n, delivery, signal));
  }

  private async retryUntilDone(n: Notification, delivery: Delivery, signal: AbortSignal): Promise<void> {
    while (delivery.attempts < this.retry.maxAttempts) {
      // No jitter (random = 1): a seeded run of the double must replay the same schedule.
      const backoffMs = backoffDelayMs(delivery.attempts, this.retry.retryBaseMs, MAX_BACKOFF_MS, () => 1);
      await delay(backoffMs, undefined, { signal });
      if (await this.attempt(n, delivery, signal)) return;
    }
    delivery.status = 'GIVEN_UP';
    this.log(
      `notification ${n.notifyId} (${n.kind} ${n.merchantOrder}) given up after ${delivery.attempts} attempts: ${delivery.lastError}`,
    );
  }

  private async attempt(n: Notification, delivery: Delivery, signal: AbortSignal): Promise<boolean> {
    delivery.attempts += 1;
    try {
      const response = await httpRequest(n.notifyUrl, {
        method: 'POST',
        headers: n.headers(),
        body: n.body,
        timeoutMs: ATTEMPT_TIMEOUT_MS,
        signal,
        maxChars: 0,
      });
      if (response.status >= 200 && response.status <= 299) {
        delivery.status = 'DELIVERED';
        return true;
      }
      delivery.lastError = `HTTP ${response.status}`;
    } catch (error) {
      delivery.lastError = (error as Error).message;
    }
    return false;
  }
}
