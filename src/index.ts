export type { Lease, Lock } from './api.ts';
export { LockClient, type LockClientEvents } from './client.ts';
export type { AcquireTraceContext, LockKind, LostMessage, RenewMessage, WakeMessage } from './diagnostics.ts';
export { LockError, LockLostError, LockNotHeldError, LockTimeoutError, type LockErrorCode, type LockErrorOptions } from './errors.ts';
export type { AcquireOptions, LockClientOptions, RedisClient, RedisConnectionOptions, TryAcquireOptions } from './options.ts';
