import type { NotifyKind } from './ledger.ts';

// What a provider double (dialect.ts) puts on the wire and keeps of what it received: a leaf, so
// the notifier and the routes can use it without importing the dialects.

/** One notification as the ledger decided it, before it is put in a provider's words. */
export interface OutgoingNotification {
  notifyId: string;
  kind: NotifyKind;
  merchantOrder: string;
  amount: number;
  txn: string;
}

/**
 * A notification as it goes on the wire: its body, fixed for every copy and retry, and its headers,
 * made again for each attempt (a signature with a timestamp must be fresh when it arrives).
 */
export interface WireNotification {
  body: string;
  headers(): Record<string, string>;
}

/** One request the double received, as `/_control/requests` lists it (`received`). */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  at: string;
}

/** The newest requests a double keeps for `/_control/requests`: enough for a test, bounded for a long run. */
const MAX_RECEIVED = 1_000;

export class RequestLog {
  private entries: ReceivedRequest[] = [];

  record(method: string, path: string, headers: Record<string, string | string[] | undefined>): void {
    const flat: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) {
      if (value === undefined) continue;
      // A double's key is a development key, but a key is never echoed whole: its last four only.
      flat[name] = name === 'authorization' ? redact(String(value)) : Array.isArray(value) ? value.join(', ') : value;
    }
    this.entries.push({ method, path, headers: flat, at: new Date().toISOString() });
    if (this.entries.length > MAX_RECEIVED) this.entries.splice(0, this.entries.length - MAX_RECEIVED);
  }

  list(): ReceivedRequest[] {
    return [...this.entries];
  }

  clear(): void {
    this.entries = [];
  }
}

function redact(value: string): string {
  const [scheme, credential = ''] = value.split(/\s+/, 2);
  return `${scheme} …${credential.slice(-4)}`;
}
