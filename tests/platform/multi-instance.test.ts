import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, notifyUrlFor } from '../../src/platform/config.ts';
import { runAsSingleton, SINGLETON_LOCKS } from '../../src/platform/singleton.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';
import { createPool, type Db } from '../../src/platform/db.ts';

// Many `flashpay start` on one database (seed 004): singleton jobs and the configured notify URL.
describe('many shop instances on one database', () => {
  let db: TestDatabase;
  let other: Db;
  beforeAll(async () => {
    db = await freshDatabase();
    other = createPool(db.url, 2); // a second "process": its own pool, its own sessions
  });
  afterAll(async () => {
    await other.end();
    await db.drop();
  });

  it('M-01 reconciliation runs in one process at a time: the second skips while the first holds the lock, and runs after', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    const first = runAsSingleton(db.pool, SINGLETON_LOCKS.reconciliation, async () => {
      entered();
      await held;
      return 'first';
    });
    await inside;
    expect(await runAsSingleton(other, SINGLETON_LOCKS.reconciliation, async () => 'second')).toBeUndefined();
    release();
    expect(await first).toBe('first');
    expect(await runAsSingleton(other, SINGLETON_LOCKS.reconciliation, async () => 'second')).toBe('second');
  });

  it('M-02 the notify URL is FLASHPAY_PUBLIC_URL when set, never guessed from a port; a malformed one refuses to start', () => {
    const config = loadConfig({ FLASHPAY_PUBLIC_URL: 'https://shop.example/' });
    expect(notifyUrlFor(config, 'http://127.0.0.1:8083')).toBe('https://shop.example/v1/payment-notifications');
    expect(notifyUrlFor(loadConfig({}), 'http://127.0.0.1:8084')).toBe(
      'http://127.0.0.1:8084/v1/payment-notifications',
    );
    expect(() => loadConfig({ FLASHPAY_PUBLIC_URL: 'not a url' })).toThrow();
    expect(() => loadConfig({ FLASHPAY_ORDER_MODE: 'maybe' })).toThrow(/FLASHPAY_ORDER_MODE/);
  });
});
