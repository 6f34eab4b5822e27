/**
 * Reentrant distributed locks on Redis: `LockClient`, the errors, and the types of everything they
 * hand out.
 *
 * @module relock
 */
export type { CountDownLatch, Election, Job, JobResult, LeaderInfo, Leadership, Lease, Lock, ReadWriteLock, Semaphore } from './api.ts';
export { LockClient, type LockClientEvents } from './client.ts';
export type { AcquireTraceContext, LockKind, LostMessage, RenewMessage, TopologyKind, WakeMessage } from './diagnostics.ts';
export type { MultiLock } from './multi-lock/multi-lock.ts';
export type { MultiLease } from './multi-lock/multi-lease.ts';
export { LockError, LockLostError, LockNotHeldError, LockTimeoutError, type LockErrorCode, type LockErrorOptions } from './errors.ts';
export type { AcquireOptions, CampaignOptions, JobOptions, LatchWaitOptions, LeaderOptions, ObserveOptions, Layout, LockClientOptions, LockOptions, SemaphoreOptions, TryAcquireOptions, TrySetCountOptions } from './options.ts';
export type {
  AnyRedisClient,
  GlideClientLike,
  GlideClusterLike,
  IoredisModule,
  NodeRedisClient,
  NodeRedisCluster,
  RedisClient,
  RedisConnectionOptions,
} from './port/clients.ts';
