import type { Clock } from '../platform/clock.ts';
import type { Db } from '../platform/db.ts';
import type { ChannelClient } from './channel.client.ts';

/** What the payment flows need: the database, the clock and the provider. */
export interface PaymentDeps {
  db: Db;
  clock: Clock;
  channel: ChannelClient;
  notifyUrl: string;
}
