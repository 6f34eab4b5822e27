// Redisson's layout over one runtime (one server or a Cluster): each kind's Redisson
// commands and keys, the kinds that cannot interoperate refused (docs/redisson.md).
import { LockError } from '../errors.ts';
import { createRedissonFairShared, redissonFairKeys, RedissonFairLockImpl } from '../fair-lock/redisson.ts';
import { REDISSON_MESSAGES } from '../lock/commands.ts';
import { redissonLockKeys } from '../lock/keys.ts';
import { createLockShared, LockImpl } from '../lock/lock.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { keySlot } from '../runtime/slot.ts';
import { RedissonRwCommands, redissonRwLockKeys } from '../rw-lock/redisson.ts';
import { ReadWriteLockImpl } from '../rw-lock/rw-lock.ts';
import { createRwShared } from '../rw-lock/shared.ts';
import { RedissonSemaphoreCommands, redissonSemaphoreKeys } from '../semaphore/redisson.ts';
import { createSemaphoreShared, SemaphoreImpl } from '../semaphore/semaphore.ts';
import { once, type Kinds } from './kinds.ts';

/** A kind the Redisson layout does not offer: refused before any I/O, with the reason. */
function unsupported(kind: string, why: string): never {
  throw new LockError(`${kind} is not offered with \`layout: 'redisson'\`: ${why} (docs/redisson.md)`, { code: 'ERR_LOCK_UNSUPPORTED' });
}

/**
 * The kinds in Redisson's layout (docs/redisson.md): the lock over RLock's and RFencedLock's keys, the
 * semaphore over RPermitExpirableSemaphore's, the read-write lock over RReadWriteLock's, the fair lock
 * over RFairLock's. On a Cluster a name whose keys Redisson would spread over several slots is refused
 * (no script could take it).
 */
export function redissonKinds(runtime: Runtime): Kinds {
  const lock = createLockShared(runtime, (_prefix, name) => redissonLockKeys(name), REDISSON_MESSAGES);
  const semaphore = once(() => createSemaphoreShared(runtime, new RedissonSemaphoreCommands(runtime.runner, runtime.publish), (_prefix, name) => redissonSemaphoreKeys(name)));
  const fair = once(() => createRedissonFairShared(runtime));
  const rw = once(() => createRwShared(runtime, new RedissonRwCommands(runtime.runner, runtime.publish), undefined, (_prefix, name) => redissonRwLockKeys(name)));
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
    fairLock: (_prefix, name) => {
      const keys = redissonFairKeys(name);
      oneSlot(name, [keys.lock, keys.queue, keys.timeouts, keys.channel, keys.fence]);
      return new RedissonFairLockImpl(fair(), name);
    },
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
    job: () => unsupported('job()', "Redisson has no jobs run once per window, and a run's window is not a state RLock knows"),
    leader: () => unsupported('leader()', 'Redisson has no leader election (its answer is an RLock), and a term\'s candidate and epoch are not a state RLock knows: elect with a client of the relock layout, or hold an RLock with lock()'),
  };
}
