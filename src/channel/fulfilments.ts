import { randomHex } from '../platform/ids.ts';

// The fake fulfilment provider (seed 002's ticket issuance): one fulfilment per key, idempotent —
// a repeat of the key gets the first answer, a refusal included (REFUSE is a refusal for good).
// In memory, or in the channel's database when its ledger is there (so `flashpay start` keeps them across a restart).
// The routes are in fulfilments.routes.ts: the ledger and the shared deps need the store, not the routes.

export interface FulfilmentRecord {
  key: string;
  orderId: string;
  status: 'FULFILLED' | 'REFUSED';
  ref: string | null;
  at: string;
}

/** Where the double keeps its fulfilments: memory, or the channel's own database (survives a restart). */
export interface FulfilmentStore {
  find(key: string): Promise<FulfilmentRecord | undefined>;
  /** The first answer for `key` wins; a repeat returns it unchanged. */
  decide(key: string, orderId: string, refuse: boolean): Promise<FulfilmentRecord>;
  list(): Promise<FulfilmentRecord[]>;
  clear(): Promise<void>;
}

export function newFulfilment(key: string, orderId: string, refuse: boolean): FulfilmentRecord {
  return {
    key,
    orderId,
    status: refuse ? 'REFUSED' : 'FULFILLED',
    ref: refuse ? null : `ful_${randomHex(12)}`,
    at: new Date().toISOString(),
  };
}

export class FulfilmentBook implements FulfilmentStore {
  private byKey = new Map<string, FulfilmentRecord>();

  async find(key: string): Promise<FulfilmentRecord | undefined> {
    return this.byKey.get(key);
  }

  async decide(key: string, orderId: string, refuse: boolean): Promise<FulfilmentRecord> {
    const found = this.byKey.get(key);
    if (found) return found;
    const record = newFulfilment(key, orderId, refuse);
    this.byKey.set(key, record);
    return record;
  }

  async list(): Promise<FulfilmentRecord[]> {
    return [...this.byKey.values()];
  }

  async clear(): Promise<void> {
    this.byKey.clear();
  }
}
