/**
 * The base of every error relock throws itself; Redis and connection errors pass through as they are.
 *
 * @example
 * ```ts
 * try { await lock.acquire({ waitMs: 100 }); }
 * catch (error) { if (error instanceof LockError) console.log(error.code); }
 * ```
 */
export class LockError extends Error {
  /** The class name, as a literal so it survives minification. */
  override readonly name: string = 'LockError';
  /** A stable code to match on: `ERR_LOCK` here, one per subclass. */
  readonly code: string = 'ERR_LOCK';
  /** The lock's name, when the error concerns one lock. */
  readonly lockName: string | undefined;

  constructor(message: string, options?: { cause?: unknown; lockName?: string }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.lockName = options?.lockName;
  }
}

/**
 * `acquire()` gave up: the lock was still held by someone else when `waitMs` ran out.
 *
 * @example
 * ```ts
 * await lock.acquire({ waitMs: 0 }).catch((e) => { if (e.code === 'ERR_LOCK_TIMEOUT') skip(); else throw e; });
 * ```
 */
export class LockTimeoutError extends LockError {
  override readonly name = 'LockTimeoutError';
  override readonly code = 'ERR_LOCK_TIMEOUT';
}

/**
 * A release (or renewal) found that the hold is gone or belongs to another owner: it expired,
 * was force-unlocked, or was already released.
 *
 * @example
 * ```ts
 * await lease.release(); await lease.release().catch((e) => e.code); // 'ERR_LOCK_NOT_HELD'
 * ```
 */
export class LockNotHeldError extends LockError {
  override readonly name = 'LockNotHeldError';
  override readonly code = 'ERR_LOCK_NOT_HELD';
}

/**
 * The hold ended while its code was still running: the lease expired, the lock was force-unlocked,
 * or Redis could not be reached before the lease would have ended. It is the `reason` of an aborted
 * `lease.signal`.
 *
 * @example
 * ```ts
 * lease.signal.addEventListener('abort', () => console.warn(lease.signal.reason.message));
 * ```
 */
export class LockLostError extends LockError {
  override readonly name = 'LockLostError';
  override readonly code = 'ERR_LOCK_LOST';
}

/** The error a pending wait rejects with when its client is closed: a DOM-style `AbortError`. */
export function closedError(): Error {
  return new DOMException('The LockClient was closed', 'AbortError');
}
