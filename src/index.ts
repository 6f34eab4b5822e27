export { LockClient } from './client.ts';
export { LockError, LockLostError, LockNotHeldError, LockTimeoutError } from './errors.ts';
export type { Lease, Lock } from './lock.ts';
export type { AcquireOptions, LockClientOptions, RedisClient, RedisConnectionOptions, TryAcquireOptions } from './options.ts';
