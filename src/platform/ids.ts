import { randomFillSync } from 'node:crypto';

/*
 * Random identifiers from a pooled CSPRNG buffer. `randomBytes(n)` asks the operating system's
 * generator once per call, about 5 µs on this machine's kernel whatever n is; an order id is drawn
 * for every buyer of a batch, a charge id for every charge. One 4 KiB fill serves ~400 ids at
 * ~0.1 µs each (docs/benchmarks/journal.md §17). The bytes are the same generator's, so the ids are as
 * unguessable as before; each byte is handed out once (the pool is refilled, never reread).
 */
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let offset = POOL_BYTES;

/** `bytes` fresh random bytes as lower-case hex (2 × bytes characters). */
export function randomHex(bytes: number): string {
  if (!Number.isInteger(bytes) || bytes < 1 || bytes > POOL_BYTES) throw new RangeError(`randomHex(${bytes})`);
  if (offset + bytes > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const hex = pool.toString('hex', offset, offset + bytes);
  offset += bytes;
  return hex;
}
