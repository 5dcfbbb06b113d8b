// What the connections of one multi-host DATABASE_URL know together about its hosts (pg-primary.ts):
// which host answered last, which refused a write lately, and whether anything happened since a
// pooled connection last checked its server's role. A partition or a failover does not close the
// connections a pool holds to the old primary: without this they keep writing there for as long as
// it accepts writes (issue 50).

// A pooled connection's role is re-checked before use at least this often: the longest a
// connection kept across a failover without any fault seen on it can write to a demoted server.
// One round trip per connection per interval.
export const ROLE_RECHECK_INTERVAL_MS = 5_000;
// A host that refused a write (25006) is tried after the others for this long (target_session_attrs=any
// would otherwise reconnect to the same standby for ever).
const READ_ONLY_MEMORY_MS = 30_000;

// Test-only switch for the negative controls (STYLE 23): never set by any deployment.
const guard = { recheck: true };

/** Turns the role re-check off in this process (negative controls only); returns the undo. */
export function disableRoleRecheckForTests(): () => void {
  guard.recheck = false;
  return () => {
    guard.recheck = true;
  };
}

export interface RoleStamp {
  checkedAt: number;
  generation: number;
}

export class HostBook {
  #lastGood = 0; // the known primary is tried first: after a failover only the first connect pays for the search
  #generation = 0;
  readonly #readOnlyAt: number[];

  constructor(
    readonly hostCount: number,
    readonly recheckMs: number = ROLE_RECHECK_INTERVAL_MS,
  ) {
    this.#readOnlyAt = Array.from({ length: hostCount }, () => -Infinity);
  }

  /** Hosts to try, in order: the last good one first, those that refused a write lately last. */
  order(now = Date.now()): number[] {
    const all = [this.#lastGood, ...Array.from({ length: this.hostCount }, (_, i) => i)];
    const unique = all.filter((index, at) => all.indexOf(index) === at);
    const recent = (index: number) => now - (this.#readOnlyAt[index] ?? -Infinity) < READ_ONLY_MEMORY_MS;
    return [...unique.filter((i) => !recent(i)), ...unique.filter(recent)];
  }

  noteGood(index: number): void {
    this.#lastGood = index;
  }

  /**
   * The host is read-only: tried after the others for a while. `signal` when it was found so by a
   * connection in use (a refused write, a re-check): then the topology changed, a failover signal.
   */
  noteReadOnly(index: number, signal: boolean, now = Date.now()): void {
    if (index < 0 || index >= this.hostCount) return;
    this.#readOnlyAt[index] = now;
    if (this.#lastGood === index) this.#lastGood = (index + 1) % this.hostCount;
    if (signal) this.signal();
  }

  /** Something changed (a connection lost, a write refused): every pooled connection re-checks before use. */
  signal(): void {
    if (guard.recheck) this.#generation++;
  }

  stamp(now = Date.now()): RoleStamp {
    return { checkedAt: now, generation: this.#generation };
  }

  isDue(stamp: RoleStamp, now = Date.now()): boolean {
    if (!guard.recheck) return false;
    return stamp.generation !== this.#generation || now - stamp.checkedAt >= this.recheckMs;
  }
}
