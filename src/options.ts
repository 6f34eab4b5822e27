// The public option types; validate.ts checks them before any I/O. The clients' shapes and the
// ioredis options live with their adapters (src/port/, listed in port/clients.ts).
import type { AnyRedisClient, IoredisModule, RedisConnectionOptions } from './port/clients.ts';

export type { AnyRedisClient, IoredisModule, RedisConnectionOptions };

/**
 * A key layout: `'relock'` (relock's own, under `prefix`) or `'redisson'` (Redisson's, shared with
 * Java services; docs/redisson.md).
 */
export type Layout = 'relock' | 'redisson';

/**
 * Options of `new LockClient(options)`. Unknown keys are refused with a `TypeError`.
 *
 * @example
 * ```ts
 * new LockClient({ redis: 'redis://127.0.0.1:6379', prefix: 'billing', leaseMs: 10_000 });
 * ```
 */
export interface LockClientOptions {
  /**
   * Where Redis is: a URL (`redis://`, `rediss://`), ioredis options, or a client you own: an
   * ioredis (or iovalkey) `Redis` / `Cluster`, or a connected node-redis client or Cluster
   * (relock duplicates it for its subscribers and never closes it; see docs/clients.md). URLs and
   * options need the ioredis package. A client or options with ioredis `keyPrefix` are refused: use
   * `prefix`.
   *
   * An array of 3 or more independent servers (all URLs/options, or all clients of any of these
   * families, but no Cluster) makes a Redlock client: `lock()` takes a majority of them (see
   * docs/redlock.md).
   * @default 'redis://127.0.0.1:6379'
   */
  redis?: string | AnyRedisClient | RedisConnectionOptions | readonly (string | AnyRedisClient | RedisConnectionOptions)[] | undefined;
  /**
   * Namespace of every key and channel relock writes: `<prefix>:{<name>}`. Not with
   * `layout: 'redisson'` (Redisson's keys have no prefix).
   * @default 'relock'
   */
  prefix?: string | undefined;
  /**
   * How locks are written in Redis. `'redisson'`: keys, fields, channels, messages and renewal as
   * Redisson (Java) writes them, so that a Node process and a Java process locking one name exclude
   * and wake each other (docs/redisson.md): the lock key is the bare name and fencing tokens come from
   * Redisson's `redisson_lock_token:{<name>}`. Kinds and options that cannot interoperate are refused
   * there, before any I/O.
   * @default 'relock'
   */
  layout?: Layout | undefined;
  /**
   * Lease, in milliseconds, of a hold acquired without `leaseMs`: the watchdog renews it every
   * `leaseMs / 3` for as long as it is held, so this is how long a crashed holder blocks others.
   * @default 30000
   */
  leaseMs?: number | undefined;
  /**
   * The longest, in milliseconds, any hold of this client may last (each acquire may set its own):
   * at that time the watchdog stops renewing it and `lease.signal` aborts with a `LockLostError` of
   * code `ERR_LOCK_MAX_HOLD`, before Redis can expire it (the lock frees within one `leaseMs`). A
   * bound for callers that forget to release or hang. See docs/guarantees.md#holds-that-end.
   * @default undefined (no bound)
   */
  maxHoldMs?: number | undefined;
  /**
   * How long, in milliseconds, a lock's fencing-token key outlives its last acquisition. Tokens keep
   * increasing after it expires (they are floored at Redis TIME in microseconds); while it lives they
   * keep increasing even if the Redis clock steps back. Not with `layout: 'redisson'`, whose token key
   * is Redisson's counter and never expires.
   * @default 3600000 (one hour)
   */
  fenceTtlMs?: number | undefined;
  /**
   * Replica sync (opt-in): after each first acquisition, wait (Redis `WAIT`) until this many replicas
   * of the master that took it acknowledged it, so that a failover right after the acquire does not
   * hand the lock out a second time. When fewer acknowledge within `replicaTimeoutMs`, the lock is
   * given back and the acquire rejects with `ERR_LOCK_REPLICATION`. Costs a `WAIT` round trip per
   * first acquisition, during which the connection to that master answers nothing else. `WAIT` is not
   * consensus: see docs/cluster.md for what it does and does not cover.
   * @default 0 (no WAIT)
   */
  replicas?: number | undefined;
  /**
   * How long, in milliseconds, an acquire with `replicas` set waits for the replicas' acknowledgements.
   * Keep it below the connection's `commandTimeout` (5 s on connections relock makes).
   * @default 1000
   */
  replicaTimeoutMs?: number | undefined;
  /**
   * The ioredis (or iovalkey) module, for a URL or ioredis options in a bundled app. relock loads
   * ioredis itself only when it opens a connection, with a `require` that bundlers (esbuild, webpack,
   * rollup) do not follow: a bundle shipped without node_modules (a Lambda, say) has no ioredis for
   * it. Handing the module over puts it in the bundle: `import Redis from 'ioredis'` and
   * `new LockClient({ redis: process.env.REDIS_URL, ioredis: Redis })` (docs/bundlers.md). Once given,
   * every client of the process uses it. Unused with a client passed in.
   * @default the ioredis installed beside relock, if any
   */
  ioredis?: IoredisModule | undefined;
}

/**
 * Options of `lock.acquire()` and `lock.runExclusive()`. Unknown keys are refused with a `TypeError`.
 *
 * @example
 * ```ts
 * await lock.acquire({ waitMs: 5_000, signal: AbortSignal.timeout(10_000) });
 * ```
 */
export interface AcquireOptions {
  /**
   * How long to wait for the lock, in milliseconds, before rejecting with `LockTimeoutError`.
   * `0` tries once. The bound holds even while Redis is unreachable.
   * @default Infinity
   */
  waitMs?: number | undefined;
  /**
   * A fixed lease in milliseconds: the hold expires after it and is never renewed; `lease.signal`
   * aborts just before. Omitted, the watchdog keeps the hold alive until it is released.
   * @default undefined (watchdog, renewing the client's `leaseMs`)
   */
  leaseMs?: number | undefined;
  /**
   * The longest this hold may last, in milliseconds from its acquisition: then it is no longer
   * renewed and `lease.signal` aborts with a `LockLostError` of code `ERR_LOCK_MAX_HOLD`. Nested
   * acquisitions share one hold: the earliest end set wins.
   * @default the client's `maxHoldMs` (no bound)
   */
  maxHoldMs?: number | undefined;
  /** Cancels the wait: the acquire rejects with `signal.reason`. It does not release a lock already held. */
  signal?: AbortSignal | undefined;
}

/**
 * Options of `lock.tryAcquire()`.
 *
 * @example
 * ```ts
 * const lease = await lock.tryAcquire({ leaseMs: 60_000 }); // null when someone else holds it
 * ```
 */
export interface TryAcquireOptions {
  /** A fixed lease in milliseconds; omitted, the watchdog keeps the hold alive. @default undefined */
  leaseMs?: number | undefined;
  /** The longest this hold may last, as `AcquireOptions.maxHoldMs`. @default the client's `maxHoldMs` */
  maxHoldMs?: number | undefined;
}

/**
 * Options of `client.lock(name, options)` and `client.fairLock(name, options)`. Unknown keys are
 * refused with a `TypeError`.
 *
 * @example
 * ```ts
 * const lock = client.lock('order:42', { maxHoldMs: 60_000 }); // no hold of it lasts over a minute
 * ```
 */
export interface LockOptions {
  /**
   * The longest a hold of this lock may last, for acquires that set none (`AcquireOptions.maxHoldMs`
   * wins; this wins over the client's `maxHoldMs`). @default the client's `maxHoldMs`
   */
  maxHoldMs?: number | undefined;
}

/**
 * Options of `client.job(name, options)`: a job run at most once per window (docs/jobs.md). Unknown
 * keys are refused with a `TypeError`.
 *
 * @example
 * ```ts
 * // Fired on every node at 03:00: one runs it; the lock stays taken 60 s from its start, and a run
 * // is cut (its lease.signal aborts) after 10 minutes.
 * const report = client.job('nightly-report', { atLeastMs: 60_000, atMostMs: 600_000 });
 * ```
 */
export interface JobOptions {
  /**
   * The least time the job's lock stays taken from the run's start, by Redis's clock, whatever `fn`
   * does: a node whose timer fires up to this late finds the window taken and does not run it again.
   * Make it longer than the clock and schedule skew between your nodes, shorter than the schedule's
   * period. At most `atMostMs`. @default 0
   */
  atLeastMs?: number | undefined;
  /**
   * The longest a run may hold the lock: then the watchdog stops renewing it and the lease's `signal`
   * aborts with a `LockLostError` of code `ERR_LOCK_MAX_HOLD` (the lease's `maxHoldMs`). At least 5.
   */
  atMostMs: number;
}

/**
 * Options of `client.semaphore(name, options)`. Unknown keys are refused with a `TypeError`.
 *
 * @example
 * ```ts
 * const pool = client.semaphore('pdf-renderer', { permits: 3 }); // at most 3 renders at once
 * ```
 */
export interface SemaphoreOptions {
  /**
   * The limit: how many permits may be held at once, over every client of this name. A whole number
   * from 1; every user of one name must pass the same (while a lease is held, an acquire with another
   * limit rejects with `ERR_LOCK_PERMITS_MISMATCH`).
   */
  permits: number;
  /**
   * The longest a lease of this semaphore may last, for acquires that set none (`AcquireOptions.maxHoldMs`
   * wins; this wins over the client's `maxHoldMs`). @default the client's `maxHoldMs`
   */
  maxHoldMs?: number | undefined;
}

/**
 * Options of `latch.trySetCount(count, options)`. Unknown keys are refused with a `TypeError`.
 *
 * @example
 * ```ts
 * await latch.trySetCount(3, { ttlMs: 3_600_000 }); // an abandoned latch is gone after an hour
 * ```
 */
export interface TrySetCountOptions {
  /**
   * A time to live for the latch, in milliseconds: one that is never counted down to 0 is deleted
   * then (and counts as open: its waiters return). Omitted, it lives until it reaches 0.
   * @default undefined (no time to live)
   */
  ttlMs?: number | undefined;
}

/**
 * Options of `latch.wait(options)`. Unknown keys are refused with a `TypeError`.
 *
 * @example
 * ```ts
 * await latch.wait({ waitMs: 60_000, signal: AbortSignal.timeout(120_000) });
 * ```
 */
export interface LatchWaitOptions {
  /**
   * How long to wait for the count to reach 0, in milliseconds, before rejecting with
   * `LockTimeoutError`. `0` looks once. The bound holds even while Redis is unreachable.
   * @default Infinity
   */
  waitMs?: number | undefined;
  /** Cancels the wait: it rejects with `signal.reason`. */
  signal?: AbortSignal | undefined;
}

/**
 * Options of `client.leader(name, options)`.
 *
 * @example
 * ```ts
 * const election = client.leader('scheduler', { candidate: 'worker-3', leaseMs: 10_000 });
 * ```
 */
export interface LeaderOptions {
  /**
   * The name this caller leads under, as `current()` and `observe()` show it (any non-empty string
   * up to 1024 characters). @default `<hostname>:<pid>`
   */
  candidate?: string | undefined;
  /**
   * The term's lease in milliseconds, renewed by the watchdog every third of it: how long a dead
   * leader keeps the others waiting. At least 30. @default the client's `leaseMs`
   */
  leaseMs?: number | undefined;
}

/** Options of `election.campaign()`. */
export interface CampaignOptions {
  /** How long to wait to lead, in milliseconds (0: one attempt). @default Infinity */
  waitMs?: number | undefined;
  /** Stops waiting when aborted: the campaign rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
}

/** Options of `election.observe()`. */
export interface ObserveOptions {
  /** Ends the iteration when aborted. */
  signal?: AbortSignal | undefined;
}
