// The kinds over a Redlock quorum of independent masters (src/redlock/): each kind's quorum version,
// or a clear refusal for a kind that has none.
import { LockError } from '../errors.ts';
import { createRedlockFairShared, RedlockFairLockImpl } from '../redlock/fair-lock.ts';
import { RedlockImpl, type RedlockShared } from '../redlock/lock.ts';
import { createRedlockRwShared } from '../redlock/rw-lock.ts';
import { createRedlockSemaphoreShared, redlockSemaphore } from '../redlock/semaphore.ts';
import { ReadWriteLockImpl } from '../rw-lock/rw-lock.ts';
import { once, type Backend } from './backend.ts';

export function quorumBackend(shared: RedlockShared): Backend {
  const fair = once(() => createRedlockFairShared(shared));
  const semaphore = once(() => createRedlockSemaphoreShared(shared));
  // The same sides as on one server, their scripts run on every master (src/redlock/rw-lock.ts).
  const rw = once(() => createRedlockRwShared(shared));
  return {
    lock: (prefix, name) => new RedlockImpl(shared, prefix, name),
    fairLock: (prefix, name) => new RedlockFairLockImpl(fair(), prefix, name),
    semaphore: (prefix, name, options) => redlockSemaphore(semaphore(), prefix, name, options),
    readWriteLock: (prefix, name) => new ReadWriteLockImpl(rw(), prefix, name),
    countDownLatch(_prefix, name) {
      throw new LockError(`countDownLatch("${name}"): a Redlock client (redis given as an array of masters) has no count-down latch; use a client of one server or a Cluster`, {
        lockName: name,
        code: 'ERR_LOCK_UNSUPPORTED',
      });
    },
  };
}
