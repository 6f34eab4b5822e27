// A Redisson (Java) client stand-in for interoperability tests: our own code and Lua written from
// Redisson's wire protocol (see shared/design/redisson-interop.md); behaviour as in Redisson 3.52-4.7.
export { redissonStandIn, RedissonStandIn, type StandInOptions } from './client.ts';
export { IllegalMonitorStateError, StandInClosedError, type RedisLike } from './context.ts';
export { FairLockStandIn, type FairLockOptions } from './fair-lock.ts';
export { FencedLockStandIn, LockStandIn, type LockOptions, type TryLockOptions } from './lock.ts';
export { keySlot, prefixName, suffixName } from './names.ts';
export { ReadLockStandIn, ReadWriteLockStandIn, WriteLockStandIn } from './rw-lock.ts';
export { PermitSemaphoreStandIn, type PermitOptions, type TryAcquireOptions } from './semaphore.ts';
export { NON_EXPIRABLE } from './semaphore-scripts.ts';
