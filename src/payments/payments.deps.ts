import type { Clock } from '../platform/clock.ts';
import type { Db, Tx } from '../platform/db.ts';
import type { AppliedEvent } from '../orders/index.ts';
import type { Answer } from './answers.ts';
import type { ChannelClient } from './channel.client.ts';
import type { ProviderConfig, StatusSync } from '../platform/provider.config.ts';

/** What the payment flows need: the database, the clock and the provider. */
export interface PaymentDeps {
  db: Db;
  clock: Clock;
  channel: ChannelClient;
  notifyUrl: string;
  /** Where a pay commits the provider's answer with its key: grouped with concurrent pays; alone without it. */
  payCommits?: PayCommits;
  /** How recovery syncs an unknown payment with the tenant's provider; the fake channel's schedule without it. */
  statusSync?: (tenantId: string, recordedProvider?: string | null) => StatusSync;
  /**
   * Which provider each tenant pays through (issue 48): a pay records it on the order, and a
   * notification from another provider changes nothing. Without it (a bare test), the fake channel.
   */
  providers?: ProviderConfig;
}

/**
 * A provider's answer, and what commits with it: a pay's key completion, or a notification's
 * record (notifications.ts), with the applied event.
 */
export interface PayAnswer {
  orderId: string;
  answer: Answer;
  complete(tx: Tx, applied: AppliedEvent): Promise<void>;
}

export interface PayCommits {
  /** Applies the answer and its completion in a transaction shared with concurrent pays. */
  record(item: PayAnswer): Promise<AppliedEvent>;
}
