// relock's layout over one runtime: one Redis server, or a Cluster (the runtime routes by slot and
// picks sharded channels; the kinds are the same).
import { FairLockImpl } from '../fair-lock/fair-lock.ts';
import { createFairShared } from '../fair-lock/shared.ts';
import { CountDownLatchImpl, createLatchShared } from '../latch/latch.ts';
import { JobImpl } from '../job/job.ts';
import { createLeaderShared, ElectionImpl } from '../leader/leader.ts';
import { createLockShared, LockImpl } from '../lock/lock.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { ReadWriteLockImpl } from '../rw-lock/rw-lock.ts';
import { createRwShared } from '../rw-lock/shared.ts';
import { createSemaphoreShared, SemaphoreImpl } from '../semaphore/semaphore.ts';
import { once, type Kinds } from './kinds.ts';

export function relockKinds(runtime: Runtime): Kinds {
  const lock = createLockShared(runtime);
  const fair = once(() => createFairShared(runtime));
  const semaphore = once(() => createSemaphoreShared(runtime));
  const rw = once(() => createRwShared(runtime));
  const latch = once(() => createLatchShared(runtime));
  // A term is renewed as a lock hold is (its owner field in a hash): in the lock's batches.
  const leader = once(() => createLeaderShared(runtime, lock.renewer));
  return {
    lock: (prefix, name) => new LockImpl(lock, prefix, name),
    fairLock: (prefix, name) => new FairLockImpl(fair(), prefix, name),
    semaphore: (prefix, name, options) => new SemaphoreImpl(semaphore(), prefix, name, options),
    readWriteLock: (prefix, name) => new ReadWriteLockImpl(rw(), prefix, name),
    countDownLatch: (prefix, name) => new CountDownLatchImpl(latch(), prefix, name),
    job: (prefix, name, options) => {
      const key = lock.keys(prefix, name).lock;
      return new JobImpl(new LockImpl(lock, prefix, name), options, async () => (await runtime.runner.read<string | null>('hget', key, 'window')) !== null);
    },
    leader: (prefix, name, options) => new ElectionImpl(leader(), prefix, name, options),
  };
}
