import type { Clock } from '../platform/clock.ts';
import type { Db } from '../platform/db.ts';
import type { ChannelClient } from './channel.client.ts';
import type { PayCommits } from './pay.group.ts';

/** What the payment flows need: the database, the clock and the provider. */
export interface PaymentDeps {
  db: Db;
  clock: Clock;
  channel: ChannelClient;
  notifyUrl: string;
  /** Where a pay commits the provider's answer with its key: grouped with concurrent pays; alone without it. */
  payCommits?: PayCommits;
}
