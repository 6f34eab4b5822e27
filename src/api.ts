// The public interfaces every lock kind hands out: a Lock to acquire, a Lease for each hold.
import type { AcquireOptions, TryAcquireOptions } from './options.ts';

/**
 * A hold on a lock, returned by `acquire()`. Release it exactly once, or let `await using` do it.
 *
 * @example
 * ```ts
 * await using lease = await lock.acquire();
 * await db.write({ fencingToken: lease.fencingToken });
 * ```
 */
export interface Lease extends AsyncDisposable {
  /** The lock's name. */
  readonly name: string;
  /** Strictly increasing per lock name across all clients; nested holds share the outer one's. */
  readonly fencingToken: number;
  /** 1 on the first acquisition, n on the n-th nested one. */
  readonly holdCount: number;
  /** Aborted, with a `LockLostError` as reason, when the hold is lost while held. */
  readonly signal: AbortSignal;
  /**
   * Gives this hold back (one level of it, when nested); the lock frees and waiters wake when the
   * count reaches 0.
   * @throws {LockNotHeldError} when this lease was released already, or the hold is gone.
   */
  release(): Promise<void>;
  /** Runs `fn` in this lease's async context, so that locking the same name inside re-enters. */
  run<T>(fn: () => T | Promise<T>): Promise<T>;
}

/**
 * A named distributed lock. Cheap to create (no I/O); get one from `client.lock(name)`.
 *
 * @example
 * ```ts
 * const lock = client.lock('order:42');
 * await lock.runExclusive(async (lease) => charge(order, lease.fencingToken));
 * ```
 */
export interface Lock {
  /** The lock's name. */
  readonly name: string;
  /**
   * Waits until the lock is held, for at most `waitMs`, and returns the lease. Called inside the
   * holder's context (`runExclusive`, `lease.run()`), it re-enters at once. It cannot make the
   * caller's code after it that context: `await using lease = await lock.acquire()` does NOT let a
   * helper that locks the same name re-enter; it waits for this very lease (a `'warning'` is emitted
   * once when that happens). Wrap such code in `lease.run(() => helper())`, or use `runExclusive`.
   * @throws {LockTimeoutError} when `waitMs` elapsed first (the lock is held).
   * @throws {LockError} `ERR_LOCK_UNREACHABLE` when Redis could not be reached; `ERR_LOCK_LEASE_TOO_SHORT` when a fixed lease keeps ending before the reply.
   * @throws {TypeError | RangeError} for bad options, before any I/O.
   */
  acquire(options?: AcquireOptions): Promise<Lease>;
  /** Tries once: the lease, or null when someone else holds the lock. Re-enters as `acquire()` does. */
  tryAcquire(options?: TryAcquireOptions): Promise<Lease | null>;
  /**
   * Acquires, runs `fn(lease)` in the lease's async context (so nested acquires of the same name
   * re-enter), and releases, whatever `fn` does. If `fn` released the lease itself, its result is
   * returned as is.
   * @throws {LockLostError} when the hold was lost while `fn` ran (its result is then discarded).
   */
  runExclusive<T>(fn: (lease: Lease) => T | Promise<T>, options?: AcquireOptions): Promise<T>;
  /** Whether anyone holds the lock now. */
  isLocked(): Promise<boolean>;
  /** Whether the current async context holds the lock (checked on Redis). */
  isHeldByCurrentContext(): Promise<boolean>;
  /** How many holds the current async context has on the lock; 0 if none. */
  holdCount(): Promise<number>;
  /** Milliseconds left on the lock's lease; null when it is not locked. */
  remainingTtlMs(): Promise<number | null>;
  /** Deletes the lock whoever holds it and wakes its waiters; true if it was locked. */
  forceUnlock(): Promise<boolean>;
}
