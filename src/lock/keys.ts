// The one place that spells the lock's Redis key and channel names, per layout. relock's: the name
// sits in a hash tag (runtime/slot.ts, tagged()), so all three live in one Cluster slot. Redisson's
// (RLock, RFencedLock): the bare name, its token key and its channel.
import { redissonPrefixed, tagged } from '../runtime/slot.ts';

export interface LockKeys {
  readonly lock: string;
  readonly fence: string;
  readonly channel: string;
}

export function lockKeys(prefix: string, name: string): LockKeys {
  const base = tagged(prefix, name);
  return { lock: base, fence: `${base}:fence`, channel: `${base}:released` };
}

/** RLock's and RFencedLock's keys: the hash `<name>`, the token `redisson_lock_token:{<name>}`, the channel. */
export function redissonLockKeys(name: string): LockKeys {
  return { lock: name, fence: redissonPrefixed('redisson_lock_token', name), channel: redissonPrefixed('redisson_lock__channel', name) };
}
