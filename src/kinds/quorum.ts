// The kinds over a Redlock quorum of independent masters (topology/quorum.ts and each kind's
// quorum.ts): each kind's quorum version, or a clear refusal for a kind that has none.
import { LockError } from '../errors.ts';
import { createRedlockFairShared, RedlockFairLockImpl } from '../fair-lock/quorum.ts';
import { LockImpl } from '../lock/lock.ts';
import { createQuorumLockShared, withLockCommands } from '../lock/quorum.ts';
import type { RedlockShared } from '../topology/quorum-setup.ts';
import { createRedlockRwShared } from '../rw-lock/quorum.ts';
import { createRedlockSemaphoreShared, redlockSemaphore } from '../semaphore/quorum.ts';
import { ReadWriteLockImpl } from '../rw-lock/rw-lock.ts';
import { once, type Kinds } from './kinds.ts';

export function quorumKinds(redlock: RedlockShared): Kinds {
  // The lock's commands and renewer, shared with the fair lock's quorum hold (a lock hold).
  const shared = withLockCommands(redlock);
  const lock = createQuorumLockShared(shared);
  const fair = once(() => createRedlockFairShared(shared));
  const semaphore = once(() => createRedlockSemaphoreShared(shared));
  // The same sides as on one server, their scripts run on every master (src/rw-lock/quorum.ts).
  const rw = once(() => createRedlockRwShared(shared));
  return {
    lock: (prefix, name) => new LockImpl(lock, prefix, name),
    fairLock: (prefix, name) => new RedlockFairLockImpl(fair(), prefix, name),
    semaphore: (prefix, name, options) => redlockSemaphore(semaphore(), prefix, name, options),
    readWriteLock: (prefix, name) => new ReadWriteLockImpl(rw(), prefix, name),
    countDownLatch(_prefix, name) {
      throw new LockError(`countDownLatch("${name}"): a Redlock client (redis given as an array of masters) has no count-down latch; use a client of one server or a Cluster`, {
        lockName: name,
        code: 'ERR_LOCK_UNSUPPORTED',
      });
    },
    leader(_prefix, name) {
      throw new LockError(`leader("${name}"): a Redlock client (redis given as an array of masters) has no leader election: observers would have to merge the changes of every master; use a client of one server or a Cluster, or lock() on this client (its fencing token is the term's epoch)`, {
        lockName: name,
        code: 'ERR_LOCK_UNSUPPORTED',
      });
    },
    job(_prefix, name) {
      throw new LockError(`job("${name}"): a Redlock client (redis given as an array of masters) has no jobs yet: a run's window would have to be kept on a majority of masters; use a client of one server or a Cluster`, {
        lockName: name,
        code: 'ERR_LOCK_UNSUPPORTED',
      });
    },
  };
}
