/**
 * Every `code` a relock error can carry, one per failure kind (docs/errors.md lists them with their
 * causes and what to do).
 *
 * @example
 * ```ts
 * function retryable(code: LockErrorCode): boolean { return code === 'ERR_LOCK_TIMEOUT' || code === 'ERR_LOCK_UNREACHABLE'; }
 * ```
 */
export type LockErrorCode =
  /** A relock error with no more specific code. */
  | 'ERR_LOCK'
  /** `waitMs` elapsed while someone else held the lock. */
  | 'ERR_LOCK_TIMEOUT'
  /** A release (or nested acquire) found the hold gone or another owner's. */
  | 'ERR_LOCK_NOT_HELD'
  /** The hold ended while its code was still running. */
  | 'ERR_LOCK_LOST'
  /** The hold reached its `maxHoldMs`: it is no longer renewed, and `lease.signal` aborted with a `LockLostError` of this code. */
  | 'ERR_LOCK_MAX_HOLD'
  /** Redis could not be reached, or did not answer in time: the connection error is the `cause`. */
  | 'ERR_LOCK_UNREACHABLE'
  /** A key relock uses holds a value of another type: someone else's data; relock left it untouched. */
  | 'ERR_LOCK_WRONG_TYPE'
  /** The Redis user may not run a command or use a key or channel relock needs (ACL `NOPERM`). */
  | 'ERR_LOCK_FORBIDDEN'
  /** A fencing token left the range of safe integers (the fence key was written by someone else). */
  | 'ERR_LOCK_FENCE_OVERFLOW'
  /** The `LockClient` was closed before the call. */
  | 'ERR_LOCK_CLOSED'
  /** A fixed `leaseMs` kept ending before Redis's reply could arrive: the lease is too short for this network. */
  | 'ERR_LOCK_LEASE_TOO_SHORT'
  /** A warning: Redis's `maxmemory-policy` may evict lock keys. */
  | 'ERR_LOCK_EVICTION_POLICY'
  /** A warning: a lease renewed by the watchdog was garbage-collected without a release; relock stopped renewing it, so its lock ends with its lease. */
  | 'ERR_LOCK_ABANDONED'
  /** A leadership was given up by `resign()` (or `await using`): the reason of its aborted `signal`. */
  | 'ERR_LOCK_RESIGNED'
  /** A warning: an acquire has waited longer than a lease for a lock that its own client holds (`await using` outside the holder's context). */
  | 'ERR_LOCK_SELF_WAIT'
  /** Redlock: too few masters answered for a majority; the message names each unreachable server (host:port) and its error. */
  | 'ERR_LOCK_NO_QUORUM'
  /** The server cannot offer this lock kind (the fair lock on a Redis Cluster without sharded pub/sub, older than Redis 7). */
  | 'ERR_LOCK_UNSUPPORTED'
  /** A semaphore acquire or `availablePermits()` found leases held under another limit: every user of a name must pass the same `permits`. */
  | 'ERR_LOCK_PERMITS_MISMATCH'
  /** A context that holds a read lock asked for the write lock of the same read-write lock: refused at once (an upgrade could deadlock). */
  | 'ERR_LOCK_UPGRADE'
  /** An acquire with `replicas` set took the lock, but fewer replicas acknowledged it (WAIT) within `replicaTimeoutMs`: the lock was given back. */
  | 'ERR_LOCK_REPLICATION'
  /** The server runs no Lua scripts (`EVALSHA`/`EVAL` unknown, or Valkey 9 without its `lua` module), which every kind needs. */
  | 'ERR_LOCK_NO_SCRIPTING';

/** What every relock error's constructor takes besides the message. */
export interface LockErrorOptions {
  /** The error underneath (a Redis or connection error). */
  cause?: unknown;
  /** The lock's name, when the error concerns one lock. */
  lockName?: string | undefined;
  /** The failure kind; each subclass fixes its own. @default 'ERR_LOCK' */
  code?: LockErrorCode | undefined;
}

/**
 * The brand of each relock error class, a `Symbol.for` key on its prototype (not enumerable). The
 * ESM and the CommonJS build loaded in one process (or two installed copies of relock) have two
 * copies of every class but the same brands, so `instanceof` holds across them (undici's way).
 */
const brands = new WeakMap<object, { readonly brand: symbol; readonly codes: readonly LockErrorCode[] | undefined }>();
const ordinaryHasInstance = Function.prototype[Symbol.hasInstance];

/** Brands one of relock's own error classes; `codes`: the codes its instances may have, if fixed. */
function brand(ErrorClass: abstract new (...args: never[]) => LockError, name: string, codes?: readonly LockErrorCode[]): void {
  const key = Symbol.for(`relock.error.${name}`);
  Object.defineProperty(ErrorClass.prototype, key, { value: true });
  brands.set(ErrorClass, { brand: key, codes });
}

/**
 * The base of every error relock throws itself; its `code` says which failure it is.
 *
 * @example
 * ```ts
 * try { await lock.acquire({ waitMs: 100 }); }
 * catch (error) { if (error instanceof LockError && error.code === 'ERR_LOCK_UNREACHABLE') console.log(error.cause); }
 * ```
 */
export class LockError extends Error {
  /** The class name, as a literal so it survives minification. */
  override readonly name: string = 'LockError';
  /** A stable code to match on: one per failure kind. */
  readonly code: LockErrorCode;
  /** The lock's name, when the error concerns one lock. */
  readonly lockName: string | undefined;

  constructor(message: string, options?: LockErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.lockName = options?.lockName;
    this.code = options?.code ?? 'ERR_LOCK';
  }

  /**
   * `instanceof` that holds across copies of relock: for `LockError` and each of its subclasses, a
   * value is an instance when it is one of this copy's, or when it carries that class's brand (and,
   * for a subclass, its code), as an error of the other build (ESM or CommonJS) does. Subclasses of
   * your own keep the ordinary rule.
   *
   * @example
   * ```ts
   * // `error` thrown by the CommonJS build, `LockTimeoutError` imported from the ESM build:
   * if (error instanceof LockTimeoutError) retryLater();
   * ```
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    if (ordinaryHasInstance.call(this, value)) return true;
    const branded = brands.get(this);
    if (branded === undefined || typeof value !== 'object' || value === null) return false;
    return (value as Record<symbol, unknown>)[branded.brand] === true && (branded.codes === undefined || branded.codes.includes((value as { code?: unknown }).code as LockErrorCode));
  }
}
brand(LockError, 'LockError');

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
brand(LockTimeoutError, 'LockTimeoutError', ['ERR_LOCK_TIMEOUT']);

/**
 * A release (or nested acquire) found that the hold is gone or belongs to another owner: it expired,
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
brand(LockNotHeldError, 'LockNotHeldError', ['ERR_LOCK_NOT_HELD']);

/**
 * The hold ended while its code was still running: the lease expired, the lock was force-unlocked,
 * or Redis could not be reached before the lease would have ended (`ERR_LOCK_LOST`); or it reached
 * its `maxHoldMs` (`ERR_LOCK_MAX_HOLD`). It is the `reason` of an aborted `lease.signal`.
 *
 * @example
 * ```ts
 * lease.signal.addEventListener('abort', () => console.warn(lease.signal.reason.code, lease.signal.reason.message));
 * ```
 */
export class LockLostError extends LockError {
  override readonly name = 'LockLostError';
  declare readonly code: 'ERR_LOCK_LOST' | 'ERR_LOCK_MAX_HOLD';

  constructor(message: string, options?: Omit<LockErrorOptions, 'code'> & { code?: 'ERR_LOCK_LOST' | 'ERR_LOCK_MAX_HOLD' | undefined }) {
    super(message, { ...options, code: options?.code ?? 'ERR_LOCK_LOST' });
  }
}
brand(LockLostError, 'LockLostError', ['ERR_LOCK_LOST', 'ERR_LOCK_MAX_HOLD']);

/**
 * The error of an acquire (or a latch's wait) called after `close()`: a `LockError`
 * `ERR_LOCK_CLOSED`, like a release after `close()`, whose `cause` is `close()`'s `AbortError`
 * (the one pending waits were rejected with).
 */
export function closedBeforeCall(reason: unknown, lockName: string): LockError {
  return new LockError(`Lock "${lockName}" cannot be acquired: its LockClient was closed`, { cause: reason, lockName, code: 'ERR_LOCK_CLOSED' });
}

/** The error a pending wait rejects with when its client is closed: a DOM-style `AbortError`. */
export function closedError(): Error {
  return new DOMException('The LockClient was closed', 'AbortError');
}
