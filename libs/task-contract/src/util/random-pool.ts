import { randomFillSync } from 'node:crypto';

/** Bytes fetched from the CSPRNG at once; a call per contract request cost more than its work. */
const POOL_BYTES = 4096;

let pool = Buffer.alloc(0);
let offset = 0;

/**
 * `bytes` random bytes as lower-case hex, taken from a buffer the operating system's CSPRNG fills
 * 4 KiB at a time. Every byte is handed out once; the values are as unpredictable as those of
 * `randomBytes`, at a fraction of the cost per call (nonces, trace and span ids).
 */
export function randomHex(bytes: number): string {
  if (bytes > POOL_BYTES) return randomFillSync(Buffer.alloc(bytes)).toString('hex');
  if (offset + bytes > pool.length) {
    pool = randomFillSync(Buffer.allocUnsafe(POOL_BYTES));
    offset = 0;
  }
  const hex = pool.toString('hex', offset, offset + bytes);
  // Nothing handed out stays readable in the pool.
  pool.fill(0, offset, offset + bytes);
  offset += bytes;
  return hex;
}
