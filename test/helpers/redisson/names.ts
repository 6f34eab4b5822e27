// Redisson's names for side keys and channels (RedissonObject.prefixName/suffixName), its random
// ids, and the Cluster slot of a key (CRC16/XMODEM of the hash tag), written from the protocol.
import { randomBytes } from 'node:crypto';

/** `<prefix>:{<name>}`, or `<prefix>:<name>` when the name already has a `{`. */
export function prefixName(prefix: string, name: string): string {
  return name.includes('{') ? `${prefix}:${name}` : `${prefix}:{${name}}`;
}

/** `{<name>}:<suffix>`, or `<name>:<suffix>` when the name already has a `{`. */
export function suffixName(name: string, suffix: string): string {
  return name.includes('{') ? `${name}:${suffix}` : `{${name}}:${suffix}`;
}

/** The hash-tagged name that read-lock timeout keys start with (RedissonReadLock.getKeyPrefix). */
export function tagged(name: string): string {
  return name.includes('{') ? name : `{${name}}`;
}

/** n random bytes: Redisson's request and permit ids (ServiceManager.generateIdArray). */
export function randomId(bytes = 16): Buffer {
  return randomBytes(bytes);
}

/** `redisson_unlock_latch:{<name>}:<32 hex>`: one unlock request's idempotency key (3.24+). */
export function unlockLatchName(name: string): string {
  return `${prefixName('redisson_unlock_latch', name)}:${randomId().toString('hex')}`;
}

/**
 * How long the unlock latch lives: Redisson's (timeout + retryDelay(retryAttempts)) x retryAttempts
 * with its defaults (3 000 ms, an equal-jitter delay of 1-2 s, 4 attempts): 16-20 s.
 */
export function unlockLatchTtlMs(): number {
  return (3_000 + 1_000 + Math.floor(Math.random() * 1_000)) * 4;
}

/** The Cluster slot of a key or shard channel: CRC16/XMODEM of its hash tag (or all of it) mod 16384. */
export function keySlot(key: string): number {
  let bytes: Uint8Array = Buffer.from(key);
  const open = bytes.indexOf(0x7b);
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) bytes = bytes.subarray(open + 1, close);
  }
  return crc16(bytes) & 0x3fff;
}

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}
