import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, sessionOptions } from '../../src/platform/db.ts';
import { freshDatabase, type TestDatabase } from '../support/db.ts';

// Every pooled session starts with jit = off and random_page_cost = 1.1 (createPool,
// src/platform/db.ts), so an untuned external server plans flashpay's statements as the embedded
// one does. With LLVM a set-based statement over 1,000 rows passes jit_above_cost on its estimates
// and spends 150–240 ms compiling what runs in 8 ms; at random_page_cost 4 a group of 1,000 keys
// is read by scanning the table (docs/benchmarks/journal.md §20, §13). The suite's embedded server has no
// LLVM and runs at 1.1 itself, so the plans are checked on the machine's own PostgreSQL (SO-03,
// tests/faults/db-restart-external.test.ts); here, the settings and what a user's PGOPTIONS does.

const setting = async (client: pg.ClientBase | pg.Pool, name: string) =>
  (await client.query<{ v: string }>(`SELECT current_setting($1) AS v`, [name])).rows[0]?.v;

describe('pooled sessions start with jit off and random_page_cost 1.1', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase({ migrated: false, poolSize: 4 });
  });
  afterAll(async () => db.drop());

  it('SO-01 each of four connections held at once runs with jit off and random_page_cost 1.1; a connection opened without the options keeps the server default jit (on)', async () => {
    const clients = await Promise.all(Array.from({ length: 4 }, () => db.pool.connect()));
    try {
      // Four distinct backends, so this is every connection of the pool, not one reused.
      const pids = await Promise.all(clients.map(async (c) => (await c.query('SELECT pg_backend_pid() AS p')).rows[0]));
      expect(new Set(pids.map((p) => p.p)).size).toBe(4);
      expect(await Promise.all(clients.map((c) => setting(c, 'jit')))).toEqual(['off', 'off', 'off', 'off']);
      expect(await Promise.all(clients.map((c) => setting(c, 'random_page_cost')))).toEqual([
        '1.1',
        '1.1',
        '1.1',
        '1.1',
      ]);
    } finally {
      for (const c of clients) c.release();
    }
    const plain = new pg.Client({ connectionString: db.url });
    await plain.connect();
    try {
      expect(await setting(plain, 'jit')).toBe('on');
    } finally {
      await plain.end();
    }
  });

  it('SO-02 PGOPTIONS is kept and, coming after ours, wins: a user can turn jit back on and choose the page cost', async () => {
    expect(sessionOptions({})).toBe('-c jit=off -c random_page_cost=1.1');
    expect(sessionOptions({ PGOPTIONS: ' -c work_mem=7MB ' })).toBe(
      '-c jit=off -c random_page_cost=1.1 -c work_mem=7MB',
    );
    const before = process.env.PGOPTIONS;
    process.env.PGOPTIONS = '-c jit=on -c random_page_cost=2 -c work_mem=7MB';
    const pool = createPool(db.url, 1);
    try {
      expect(await setting(pool, 'jit')).toBe('on');
      expect(await setting(pool, 'random_page_cost')).toBe('2');
      expect(await setting(pool, 'work_mem')).toBe('7MB');
    } finally {
      await pool.end();
      if (before === undefined) delete process.env.PGOPTIONS;
      else process.env.PGOPTIONS = before;
    }
    // Without it, back to ours.
    const again = createPool(db.url, 1);
    try {
      expect(await setting(again, 'jit')).toBe('off');
      expect(await setting(again, 'work_mem')).not.toBe('7MB');
    } finally {
      await again.end();
    }
  });
});
