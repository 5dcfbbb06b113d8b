import pg from 'pg';
import { isRoleChecked } from './pg-primary.ts';

// A pg.Pool that asks a pooled connection whether its server can still write before handing it out,
// when the connection's URL says that is due (after a failover signal, or at the bounded interval:
// pg-role.ts). A connection to a server that turned standby or read-only is discarded there, before
// any statement of the caller meets it; the next one is searched for afresh (pg-primary.ts). A plain
// single-host URL's connections have no role to check: the pool is pg's, unchanged.

// The role question's own bound: a server that does not answer it is as unreachable as one that
// does not answer a statement.
const ROLE_CHECK_TIMEOUT_MS = 2_000;

type ConnectCallback = (
  err: Error | undefined,
  client: pg.PoolClient | undefined,
  done: (release?: unknown) => void,
) => void;

export class CheckedPool extends pg.Pool {
  override connect(): Promise<pg.PoolClient>;
  override connect(callback: ConnectCallback): void;
  override connect(callback?: ConnectCallback): Promise<pg.PoolClient> | void {
    const checked = this.#checkedConnect();
    if (!callback) return checked;
    checked.then(
      (client) => callback(undefined, client, (release) => client.release(release as boolean | Error | undefined)),
      (error: Error) => callback(error, undefined, () => undefined),
    );
  }

  async #checkedConnect(): Promise<pg.PoolClient> {
    // Each round either takes another idle connection or opens a new one (checked as it opens):
    // bounded by the pool's size.
    const rounds = (this.options.max ?? 10) + 1;
    for (let round = 0; ; round++) {
      const client = await super.connect();
      if (!isRoleChecked(client) || !client.roleCheckDue() || round >= rounds) return client;
      // Checked out, the client has no pool listener: a server that dies during the question (MH-03
      // once killed the primary there) would be an unhandled 'error' ending the process. Ours stays
      // on a client that is discarded; a late socket error of it is nobody's.
      const lost = () => undefined;
      client.on('error', lost);
      let writable: boolean;
      try {
        writable = await client.checkRole(ROLE_CHECK_TIMEOUT_MS);
      } catch (error) {
        client.release(true);
        throw error;
      }
      if (writable) {
        client.off('error', lost);
        return client;
      }
      client.release(true);
    }
  }
}
