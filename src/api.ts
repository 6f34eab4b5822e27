// The public interfaces every lock kind hands out: a Lock to acquire, a Lease for each hold.
import type { AcquireOptions, CampaignOptions, LatchWaitOptions, ObserveOptions, TryAcquireOptions, TrySetCountOptions } from './options.ts';

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

/**
 * A distributed counting semaphore: at most `permits` permits held at once across every client of
 * one name. Each acquire is its own lease holding its permits (1 by default) until released, kept
 * alive by the watchdog or ended by a fixed `leaseMs`: a crashed holder's permits come back when its
 * lease ends. Not reentrant: every acquire is a new lease (`holdCount` 1), even inside another's
 * context. Cheap to create (no I/O); get one from `client.semaphore(name, { permits })`.
 *
 * @example
 * ```ts
 * const renderers = client.semaphore('pdf-renderer', { permits: 3 });
 * await renderers.runExclusive(() => render(doc)); // at most 3 at once, over every process
 * await using big = await renderers.acquire({ permits: 2, waitMs: 10_000 });
 * ```
 */
export interface Semaphore {
  /** The semaphore's name. */
  readonly name: string;
  /** The limit every user of this name passes: how many permits may be held at once. */
  readonly permits: number;
  /**
   * Waits until `permits` (default 1) are free, for at most `waitMs`, and returns the lease holding
   * them. Queued locally in arrival order: a release of k permits wakes as many waiters as fit in k.
   * @throws {LockTimeoutError} when `waitMs` elapsed first.
   * @throws {LockError} `ERR_LOCK_PERMITS_MISMATCH` when leases held under another limit exist;
   *   `ERR_LOCK_UNREACHABLE` when Redis could not be reached.
   * @throws {TypeError | RangeError} for bad options (`permits` above the limit), before any I/O.
   */
  acquire(options?: AcquireOptions & { permits?: number }): Promise<Lease>;
  /** Tries once: the lease, or null when too few permits are free. */
  tryAcquire(options?: { leaseMs?: number; permits?: number }): Promise<Lease | null>;
  /**
   * Acquires, runs `fn(lease)`, and releases, whatever `fn` does.
   * @throws {LockLostError} when the lease was lost while `fn` ran (its result is then discarded).
   */
  runExclusive<T>(fn: (lease: Lease) => T | Promise<T>, options?: AcquireOptions & { permits?: number }): Promise<T>;
  /**
   * How many permits are free now: the limit less the permits of live leases (a lease past its end
   * counts as free). A snapshot: another client may take them a moment later.
   * @throws {LockError} `ERR_LOCK_PERMITS_MISMATCH` when leases held under another limit exist.
   */
  availablePermits(): Promise<number>;
}

/**
 * A distributed read-write lock: many readers or one writer. Each side is a `Lock` of its own,
 * reentrant per async context. The writer's context may also take the read lock (downgrade); a
 * reader's context asking for the write lock is refused at once with `LockError` code
 * `ERR_LOCK_UPGRADE`. Each reader's hold has its own lease. Writer-preferring: a waiting writer
 * keeps new readers out, and a write release lets the readers waiting then in before the next
 * writer (docs/read-write-lock.md). Cheap to create (no I/O); get one from
 * `client.readWriteLock(name)`.
 *
 * @example
 * ```ts
 * const prices = client.readWriteLock('prices');
 * const price = await prices.readLock().runExclusive(() => cache.get(sku)); // readers share
 * await prices.writeLock().runExclusive(async (lease) => db.write(sku, next, lease.fencingToken));
 * ```
 */
export interface ReadWriteLock {
  /** The lock's name (both sides report it). */
  readonly name: string;
  /**
   * The read side: held by any number of readers at once while no writer holds the write side.
   * `isLocked()` tells whether some read hold exists; `forceUnlock()` removes the read holds only.
   */
  readLock(): Lock;
  /**
   * The write side: exclusive of every other hold but the downgraded read holds of its own context.
   * `isLocked()` tells whether a write hold exists; `forceUnlock()` removes the write hold only.
   * Fencing tokens strictly increase across write holds.
   * @throws {LockError} `ERR_LOCK_UPGRADE` (from `acquire()`, `tryAcquire()` and `runExclusive()`)
   *   when the current context holds the read lock and not the write lock.
   */
  writeLock(): Lock;
}

/**
 * A distributed count-down latch (Redisson's RCountDownLatch): a count set once, counted down by
 * any process, and every waiter let through when it reaches 0. A latch that is not set is open.
 * Waiters sleep until the one message published at 0 (pub/sub), never polling; a lost message (a
 * reconnect) makes them look again. Cheap to create (no I/O); get one from
 * `client.countDownLatch(name)`. See docs/latch.md.
 *
 * @example
 * ```ts
 * const ready = client.countDownLatch('shards-loaded');
 * await ready.trySetCount(3);          // once, by whoever starts the round
 * await ready.countDown();             // by each of the 3 loaders when done
 * await ready.wait({ waitMs: 60_000 }); // by whoever needs all 3
 * ```
 */
export interface CountDownLatch {
  /** The latch's name. */
  readonly name: string;
  /**
   * Sets the count, unless the latch is set already (its count above 0): true when set, false when
   * it was (nothing changes then).
   * @param count a whole number from 1 to `Number.MAX_SAFE_INTEGER`
   * @throws {TypeError | RangeError} for a bad `count` or `ttlMs`, before any I/O.
   */
  trySetCount(count: number, options?: TrySetCountOptions): Promise<boolean>;
  /**
   * Counts down by one and resolves with the count after it; at 0 the latch is deleted and every
   * waiter, in every process, is woken. On a latch that is not set it does nothing and resolves
   * with 0. A call the connection sends twice (a reconnect) counts once.
   */
  countDown(): Promise<number>;
  /** The count now: 0 when the latch is not set (or has reached 0). */
  count(): Promise<number>;
  /**
   * Resolves once the count is 0 (at once when the latch is not set).
   * @throws {LockTimeoutError} when `waitMs` passed first; the signal's reason when it aborted;
   *   `LockError` `ERR_LOCK_CLOSED` when the client was closed.
   */
  wait(options?: LatchWaitOptions): Promise<void>;
}

/**
 * What `job.run()` resolved to: the job ran here and `fn` returned `value`, or it did not run: `held`,
 * a run is under way (here or elsewhere); `window`, a run started within the last `atLeastMs`.
 */
export type JobResult<T> =
  | {
      /** The job ran here. */
      readonly ran: true;
      /** What `fn` returned, awaited. */
      readonly value: T;
    }
  | {
      /** The job did not run here. */
      readonly ran: false;
      /** `held`: a run is under way; `window`: a run started less than `atLeastMs` ago. */
      readonly reason: 'held' | 'window';
    };

/**
 * A job run at most once per window across every process: get one from `client.job(name, options)`
 * (cheap, no I/O). Its lock is `client.lock(name)`'s, so a `relock run` of the same name excludes it too.
 *
 * @example
 * ```ts
 * const report = client.job('nightly-report', { atLeastMs: 60_000, atMostMs: 600_000 });
 * cron.schedule('0 3 * * *', async () => {
 *   const result = await report.run((lease) => buildReport({ signal: lease.signal }));
 *   if (!result.ran) log.info(`nightly report: ${result.reason}`);
 * });
 * ```
 */
export interface Job {
  /** The job's name: its lock's. */
  readonly name: string;
  /**
   * Runs `fn(lease)` when the job is free, without waiting: otherwise resolves `{ ran: false, reason }`
   * at once. The lease is renewed by the watchdog while `fn` runs, for at most `atMostMs` (then its
   * `signal` aborts with `ERR_LOCK_MAX_HOLD`); when `fn` ends (returns or throws) the lock stays taken
   * until `atLeastMs` after the start, by Redis's clock. Called inside a run of the same job (its
   * async context), resolves `{ ran: false, reason: 'held' }`.
   * @throws whatever `fn` threw (the window is kept all the same); {LockLostError} when the lease was
   *   lost while `fn` ran (`ERR_LOCK_MAX_HOLD` when it was cut at `atMostMs`): another node may run the job meanwhile;
   *   {LockError} `ERR_LOCK_UNREACHABLE` when Redis could not be reached; {TypeError} when `fn` is not a function.
   */
  run<T>(fn: (lease: Lease) => T | Promise<T>): Promise<JobResult<T>>;
}

/** Who leads an election: the candidate's name, its term's epoch, and when the term began. */
export interface LeaderInfo {
  /** The candidate's name, as it campaigned (`leader(name, { candidate })`). */
  readonly candidate: string;
  /**
   * The term's fencing token: strictly increasing over every term of the election's name, never
   * repeated (Redis `TIME` in microseconds, or the last epoch + 1; its key never expires).
   */
  readonly epoch: number;
  /** When the term began, by Redis's clock: milliseconds since the Unix epoch. */
  readonly since: number;
}

/**
 * This caller's term as leader, from `election.campaign()`. The watchdog renews it until `resign()`,
 * `client.close()` (then it ends with its lease), or a loss: Redis unreachable for a lease, or the
 * term's key gone. It is never ended by garbage collection: a leader leads until it resigns or its
 * process ends. Pass `epoch` to what the leader writes, as a fencing token.
 *
 * @example
 * ```ts
 * await using leadership = await client.leader('scheduler').campaign();
 * await runScheduler({ signal: leadership.signal, epoch: leadership.epoch });
 * ```
 */
export interface Leadership extends LeaderInfo, AsyncDisposable {
  /**
   * Aborts when the term ends: lost (`LockLostError`, `ERR_LOCK_LOST`: not renewed in time, so
   * aborted before the lease can end on Redis and another lead), given up (`LockError`,
   * `ERR_LOCK_RESIGNED`, at the call of `resign()`), or its client closed (`LockLostError`: the
   * term is renewed no more and ends with its lease).
   */
  readonly signal: AbortSignal;
  /**
   * Gives the term up: the signal aborts at once, the term's key goes, and the next candidate is
   * woken. Resolves also when the term had ended already (the signal says why).
   * @throws {LockError} `ERR_LOCK_UNREACHABLE` when Redis could not be reached (relock sends it again;
   *   the term ends with its lease at the latest); `ERR_LOCK_CLOSED` after `client.close()`.
   */
  resign(): Promise<void>;
}

/**
 * A leader election by name: get one from `client.leader(name, options)` (cheap, no I/O). One
 * candidate leads at a time across every process; the others' campaigns wait, woken by pub/sub.
 *
 * @example
 * ```ts
 * const election = client.leader('scheduler', { candidate: `${hostname()}:${process.pid}` });
 * for await (const leader of election.observe({ signal })) console.log('leader now', leader?.candidate ?? 'nobody');
 * ```
 */
export interface Election {
  /** The election's name. */
  readonly name: string;
  /**
   * Waits until this caller leads, for at most `waitMs` (default: for ever), woken by pub/sub when
   * a term ends (and by the term's lease end when its leader died), and returns the term. Each call
   * is a candidate of its own: two campaigns of one process wait for each other.
   * @throws {LockTimeoutError} when `waitMs` elapsed first; the signal's reason when it aborted.
   * @throws {LockError} `ERR_LOCK_UNREACHABLE` when Redis could not be reached.
   * @throws {TypeError | RangeError} for bad options, before any I/O.
   */
  campaign(options?: CampaignOptions): Promise<Leadership>;
  /** Who leads now, read from Redis; null when nobody does. */
  current(): Promise<LeaderInfo | null>;
  /**
   * Every change of leader, pushed (pub/sub), not polled: first who leads when the iteration begins
   * (or null), then each new term and each end, in order of epoch, never an epoch twice or going back.
   * A term that ends by its lease (its leader died or was cut off) publishes nothing: it is seen at
   * the lease's end, by one read. A term that ends and the next that begins within one message's
   * travel may show no null between them. The iteration ends when `signal` aborts, when the loop
   * breaks, or when the client closes.
   * @throws {LockError} `ERR_LOCK_UNREACHABLE` from the first step when Redis could not be reached
   *   (later outages are waited out: the iteration reads again once the subscriber is back).
   */
  observe(options?: ObserveOptions): AsyncIterable<LeaderInfo | null>;
}
