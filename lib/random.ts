import { randomBytes, randomFillSync } from 'node:crypto';

// Filled 4 KiB at a time: one getrandom call per 512 ids of 8 bytes instead of one per id.
const _POOL = Buffer.alloc(4096);
let _at = _POOL.length;

/**
 * `bytes` fresh random bytes as lower-case hex, from the same CSPRNG as `randomBytes`. Each pool
 * byte is handed out once, so ids drawn from it are as unpredictable as separate draws would be.
 */
export function randomHex(bytes: number): string {
  if (!Number.isInteger(bytes) || bytes < 1) throw new RangeError(`Cannot draw random bytes: expected a positive whole number, got ${bytes}`);
  if (bytes > _POOL.length) return randomBytes(bytes).toString('hex');
  if (_at + bytes > _POOL.length) {
    randomFillSync(_POOL);
    _at = 0;
  }
  const hex = _POOL.toString('hex', _at, _at + bytes);
  _at += bytes;
  return hex;
}
