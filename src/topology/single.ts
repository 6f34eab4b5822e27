// The kinds over one runtime: one Redis server, or a Cluster (the runtime routes by slot and picks
// sharded channels; the kinds are the same).
import { FairLockImpl } from '../fair-lock/fair-lock.ts';
import { createFairShared } from '../fair-lock/shared.ts';
import { CountDownLatchImpl, createLatchShared } from '../latch/latch.ts';
import { createLockShared, LockImpl } from '../lock/lock.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { ReadWriteLockImpl } from '../rw-lock/rw-lock.ts';
import { RedissonRwCommands, redissonRwLockKeys } from '../rw-lock/redisson.ts';
import { createRwShared } from '../rw-lock/shared.ts';
import { createSemaphoreShared, SemaphoreImpl } from '../semaphore/semaphore.ts';
import type { Layout } from '../options.ts';
import { keySlot } from '../runtime/slot.ts';
import { LockError } from '../errors.ts';
import { once, type Backend } from './backend.ts';

export function singleBackend(runtime: Runtime, layout: Layout = 'relock'): Backend {
  if (layout === 'redisson') return redissonBackend(runtime);
  const lock = createLockShared(runtime);
  const fair = once(() => createFairShared(runtime));
  const semaphore = once(() => createSemaphoreShared(runtime));
  const rw = once(() => createRwShared(runtime));
  const latch = once(() => createLatchShared(runtime));
  return {
    lock: (prefix, name) => new LockImpl(lock, prefix, name),
    fairLock: (prefix, name) => new FairLockImpl(fair(), prefix, name),
    semaphore: (prefix, name, options) => new SemaphoreImpl(semaphore(), prefix, name, options),
    readWriteLock: (prefix, name) => new ReadWriteLockImpl(rw(), prefix, name),
    countDownLatch: (prefix, name) => new CountDownLatchImpl(latch(), prefix, name),
  };
}

/** A kind the Redisson layout does not offer: refused before any I/O, with the reason. */
function unsupported(kind: string, why: string): never {
  throw new LockError(`${kind} is not offered with \`layout: 'redisson'\`: ${why} (docs/redisson.md)`, { code: 'ERR_LOCK_UNSUPPORTED' });
}

/**
 * The kinds in Redisson's layout (docs/redisson.md): the lock over RLock's and RFencedLock's keys, the
 * semaphore over RPermitExpirableSemaphore's, the read-write lock over RReadWriteLock's. On a Cluster a name whose keys Redisson would spread
 * over several slots is refused (no script could take it).
 */
function redissonBackend(runtime: Runtime): Backend {
  const lock = createLockShared(runtime, 'redisson');
  const semaphore = once(() => createSemaphoreShared(runtime, 'redisson'));
  const rw = once(() => createRwShared(runtime, new RedissonRwCommands(runtime.runner, runtime.publish), undefined, (_prefix, name) => redissonRwLockKeys(name)));
  const later = 'relock does not share it with Redisson yet';
  // On a Cluster a name whose keys Redisson spreads over several slots cannot be taken by a script.
  const oneSlot = (name: string, keys: readonly string[]) => {
    if (runtime.cluster && new Set(keys.map(keySlot)).size > 1) {
      throw new TypeError(`Expected \`name\` whose Redisson keys share one Cluster slot, got "${name}": its braces put ${keys.map((key) => `"${key}"`).join(', ')} in different slots`);
    }
  };
  return {
    lock: (prefix, name) => {
      const keys = lock.keys(prefix, name);
      oneSlot(name, [keys.lock, keys.fence, keys.channel]);
      return new LockImpl(lock, prefix, name);
    },
    fairLock: () => unsupported('fairLock()', later),
    semaphore: (prefix, name, options) => {
      const keys = semaphore().keys(prefix, name);
      oneSlot(name, [keys.sem, keys.leases, keys.fence, keys.channel]);
      return new SemaphoreImpl(semaphore(), prefix, name, options);
    },
    readWriteLock: (prefix, name) => {
      const keys = rw().keys(prefix, name);
      oneSlot(name, [keys.hash, keys.leases, keys.fence, keys.toReaders]);
      return new ReadWriteLockImpl(rw(), prefix, name);
    },
    countDownLatch: () => unsupported('countDownLatch()', "Redisson's RCountDownLatch is not part of the layout"),
  };
}
