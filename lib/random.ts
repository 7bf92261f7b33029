// Random hex ids from a pooled CSPRNG buffer (the id of a wrapped payload).

import { randomBytes, randomFillSync } from 'node:crypto';

// Filled 4 KiB at a time: one getrandom call per 512 ids of 8 bytes instead of one per id.
const _POOL = Buffer.alloc(4096);
let _at = _POOL.length;

/**
 * `bytes` fresh random bytes as lower-case hex, from the same CSPRNG as `randomBytes`. Each pool
 * byte is handed out once, so ids drawn from it are as unpredictable as separate draws would be.
 */
export function randomHex(bytes: number): string {
  if (!Number.isInteger(bytes) || bytes < 1) {
    throw new RangeError(`Cannot draw random bytes: expected a positive whole number, got ${bytes}`);
  }
  if (bytes > _POOL.length) return randomBytes(bytes).toString('hex');
  if (_at + bytes > _POOL.length) {
    randomFillSync(_POOL);
    _at = 0;
  }
  const hex = _POOL.toString('hex', _at, _at + bytes);
  _at += bytes;
  return hex;
}

/**
 * A source of UUID-shaped ids (8-4-4-4-12 hex) for labels that must be unique, not secret: 64
 * random bits drawn once, then a 64-bit counter. Unique within the process; two processes share
 * a prefix with probability 2^-64 per pair. Anyone who saw one id can predict the next, so these
 * are never credentials or capabilities: a request id is only echoed and logged, and a client
 * may choose its own anyway (X-Request-Id).
 */
export function idSequence(): () => string {
  const random = randomHex(8);
  const prefix = `${random.slice(0, 8)}-${random.slice(8, 12)}-${random.slice(12, 16)}-`;
  let high = 0;
  let low = 0;
  return () => {
    // Two 32-bit halves: exact far past 2^53 ids, and plain integer work per id.
    low = (low + 1) >>> 0;
    if (low === 0) high = (high + 1) >>> 0;
    const hex = high.toString(16).padStart(8, '0') + low.toString(16).padStart(8, '0');
    return `${prefix}${hex.slice(0, 4)}-${hex.slice(4)}`;
  };
}
