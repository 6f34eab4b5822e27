// LockClient: owns the connections it made and the Runtime; the factories of every lock kind.
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { CountDownLatch, Election, Job, Lock, ReadWriteLock, Semaphore } from './api.ts';
import { portOf } from './port/clients.ts';
import { useIoredis } from './port/ioredis-connection.ts';
import type { RedisPort } from './port/port.ts';
import { closedError, LockError, LockLostError } from './errors.ts';
import { MultiLockImpl, type MultiLock } from './multi-lock/multi-lock.ts';
import { checkJobOptions } from './job/job.ts';
import { checkLeaderOptions } from './leader/leader.ts';
import type { LockBase } from './lock-base.ts';
import type { AnyRedisClient, JobOptions, LeaderOptions, Layout, LockClientOptions, LockOptions, RedisConnectionOptions, SemaphoreOptions } from './options.ts';
import { checkServers } from './topology/quorum-servers.ts';
import { createRedlock } from './topology/quorum-setup.ts';
import { Runtime } from './runtime/runtime.ts';
import type { Kinds } from './kinds/kinds.ts';
import { quorumKinds } from './kinds/quorum.ts';
import { redissonKinds } from './kinds/redisson.ts';
import { relockKinds } from './kinds/relock.ts';
import { checkIoredisModule, checkLayout, checkMs, checkName, checkReplicas, checkOptions, checkPrefix, checkRedis, DEFAULTS, MIN_FIXED_LEASE_MS, MIN_WATCHDOG_LEASE_MS } from './validate.ts';

/**
 * The events of a LockClient.
 *
 * @example
 * ```ts
 * client.on('warning', (warning) => log.warn(warning.code, warning.message));
 * ```
 */
export interface LockClientEvents {
  /** Connection errors of the connections relock made, and renewal failures (only when someone listens). */
  error: [error: Error];
  /** `ERR_LOCK_EVICTION_POLICY` (checked at the first acquire) and `ERR_LOCK_SELF_WAIT` (once). */
  warning: [warning: LockError];
}

/**
 * A connection to Redis for locks: owns at most one command connection (only one it created) and
 * one shared subscriber connection, whatever the number of locks and waiters.
 *
 * Emits `'error'` with connection errors of the connections it created and of renewals, when
 * someone listens (they are otherwise only logged under `NODE_DEBUG=relock:*`), and `'warning'`
 * (a `LockError`) once, at the first acquire, when the server's `maxmemory-policy` can evict lock keys,
 * and once when an acquire waits for a lock its own client holds (the `await using` trap).
 *
 * @example
 * ```ts
 * const client = new LockClient({ redis: 'redis://127.0.0.1:6379' });
 * await client.lock('report:nightly').runExclusive(() => buildReport());
 * await client.close();
 * ```
 */
export class LockClient extends EventEmitter<LockClientEvents> {
  /** A random, unguessable id (UUID) for this client; the first half of every owner field it writes. */
  readonly id: string = randomUUID();
  /** The key namespace (unused in the Redisson layout, whose keys have none). */
  readonly prefix: string;
  /** The key layout: relock's own, or Redisson's (docs/redisson.md). */
  readonly layout: Layout;
  /** The watchdog lease in milliseconds. */
  readonly leaseMs: number;

  readonly #runtime: Runtime;
  /** The kinds of this client's topology: one server or a Cluster, or a Redlock quorum. */
  readonly #kinds: Kinds;
  /** The command ports (several on a Redlock client): close() closes the connections relock made. */
  readonly #ports: readonly RedisPort[];
  #closing: Promise<void> | undefined;

  /**
   * @throws {TypeError | RangeError} for bad options, naming the option, before any connection is made.
   */
  constructor(options?: LockClientOptions) {
    super();
    const o = checkOptions('LockClient', options, ['redis', 'prefix', 'layout', 'leaseMs', 'maxHoldMs', 'fenceTtlMs', 'replicas', 'replicaTimeoutMs', 'ioredis']);
    const ioredisModule = checkIoredisModule(o.ioredis);
    this.layout = checkLayout(o);
    const servers = Array.isArray(o.redis) ? checkServers(o.redis) : undefined;
    const redis = servers ? undefined : checkRedis(o.redis);
    this.prefix = checkPrefix(o.prefix);
    this.leaseMs = checkMs('leaseMs', o.leaseMs, MIN_WATCHDOG_LEASE_MS) ?? DEFAULTS.leaseMs;
    const maxHoldMs = checkMs('maxHoldMs', o.maxHoldMs, MIN_FIXED_LEASE_MS);
    // Not a timer: a fence key may outlive its last acquisition by up to a year. Redisson's token key
    // never expires: 0 tells the scripts so.
    const fenceTtlMs = this.layout === 'redisson' ? 0 : (checkMs('fenceTtlMs', o.fenceTtlMs, 1, 366 * 24 * 3_600_000) ?? DEFAULTS.fenceTtlMs);
    const replicas = checkReplicas(o.replicas);
    const replicaTimeoutMs = checkMs('replicaTimeoutMs', o.replicaTimeoutMs, 1, 60_000);
    if (servers && replicas > 0) throw new TypeError('Expected `replicas` only with one Redis server or a Cluster: a Redlock client (redis given as an array) has no replica sync');
    if (ioredisModule) useIoredis(ioredisModule);

    if (servers) {
      // Redlock: one lock over several independent masters (src/topology/quorum*.ts, each kind's quorum.ts; docs/redlock.md).
      const redlock = createRedlock({
        servers,
        clientId: this.id,
        leaseMs: this.leaseMs,
        maxHoldMs,
        fenceTtlMs,
        events: this as EventEmitter,
        connect: ({ given }) => this.#port(given),
      });
      this.#ports = redlock.ports;
      this.#runtime = redlock.runtime;
      this.#kinds = quorumKinds(redlock.shared);
      return;
    }
    const port = this.#port(redis!);
    this.#ports = [port];
    this.#runtime = new Runtime({
      clientId: this.id,
      leaseMs: this.leaseMs,
      maxHoldMs,
      fenceTtlMs,
      port,
      events: this as EventEmitter,
      replicas,
      replicaTimeoutMs,
      numberedOwners: this.layout === 'redisson',
    });
    this.#kinds = this.layout === 'redisson' ? redissonKinds(this.#runtime) : relockKinds(this.#runtime);
  }

  /**
   * The port over a client passed in, or over a connection made from a URL or options (owned: closed
   * by close()). Connections this client makes report their errors through the client instead of
   * ioredis's console warning.
   */
  #port(given: string | AnyRedisClient | RedisConnectionOptions): RedisPort {
    return portOf(given, (error) => this.#runtime.error(error));
  }

  /**
   * A lock by name. Cheap: no I/O, and two calls with one name give locks that share everything.
   * On a Redlock client (`redis` given as an array of masters) it is a quorum lock (docs/redlock.md).
   * @param name a non-empty string of at most 1024 bytes, well-formed UTF-16
   * @param options `maxHoldMs`: the longest a hold of this lock may last (see {@link LockOptions})
   * @throws {TypeError | RangeError} for a bad name or options.
   */
  lock(name: string, options?: LockOptions): Lock {
    return bounded(this.#kinds.lock(this.prefix, checkName(name)), options);
  }

  /**
   * A fair lock by name: the same `Lock`, but waiters from every process are served in the order
   * they started waiting, and a release hands the lock directly to the head of the queue (no second
   * round trip). `tryAcquire()` never jumps a non-empty queue. Uncontended it costs what `lock()`
   * does (one script); a hand-off costs one more (the grantee's confirm). Pick it when waits must be
   * short and fair under contention (see docs/fair-lock.md). Its keys are apart from `lock(name)`'s:
   * the two never exclude each other. Cheap: no I/O.
   * @param name a non-empty string of at most 1024 bytes, well-formed UTF-16
   * @param options `maxHoldMs`: the longest a hold of this lock may last (see {@link LockOptions})
   * @throws {TypeError | RangeError} for a bad name or options.
   * On a Redis Cluster it needs sharded pub/sub (Redis 7 or later): on an older Cluster its acquires
   * reject with `ERR_LOCK_UNSUPPORTED` (PUBLISH counts the receivers of one node only).
   * On a Redlock client the order is kept by one master (the gate) and the exclusion by a quorum
   * lock: see docs/fair-lock.md#on-a-redlock-client.
   * @example
   * ```ts
   * const queue = client.fairLock('printer');
   * await queue.runExclusive(() => print(job)); // served in arrival order across processes
   * ```
   */
  fairLock(name: string, options?: LockOptions): Lock {
    return bounded(this.#kinds.fairLock(this.prefix, checkName(name)), options);
  }

  /**
   * One `Lock` over several locks of this client (`lock()`, `fairLock()`, a read-write lock's sides): `acquire` takes all
   * or none, one by one in the order of their keys (the same in every process, so two multi-locks over
   * shared members never deadlock), within one `waitMs` for the whole, and gives back what it took
   * when it fails, times out or is aborted. Its lease's `signal` aborts when any member is lost; its
   * `release` frees every member. Its name joins the members' names with commas. Cheap: no I/O. See
   * docs/multi-lock.md.
   * @param locks at least one lock of this client, each once
   * @throws {TypeError} when a member is not a lock of this client; {RangeError} when `locks` is
   *   empty, holds a lock twice, or both sides of one read-write lock.
   * @example
   * ```ts
   * const both = client.multiLock([client.lock('account:1'), client.lock('account:2')]);
   * await both.runExclusive(() => transfer(1, 2, 100));
   * ```
   */
  multiLock(locks: readonly Lock[]): MultiLock {
    return new MultiLockImpl(this.#runtime, locks);
  }

  /**
   * A counting semaphore by name: at most `permits` held at once over every client of the name, each
   * lease holding its permits until released (kept alive by the watchdog, or a fixed `leaseMs`). Not
   * reentrant. Its keys are apart from `lock(name)`'s. Cheap: no I/O. See docs/semaphore.md.
   * On a Redlock client it is a quorum semaphore of at most 1000 permits, permits as slots held by
   * a majority (docs/semaphore.md#on-a-redlock-client).
   * @param name a non-empty string of at most 1024 bytes, well-formed UTF-16
   * @param options `permits`: the limit, a whole number from 1, the same for every user of the name
   * @throws {TypeError | RangeError} for a bad name or `permits`.
   * @example
   * ```ts
   * const renderers = client.semaphore('pdf-renderer', { permits: 3 });
   * await renderers.runExclusive(() => render(doc));
   * ```
   */
  semaphore(name: string, options: SemaphoreOptions): Semaphore {
    return this.#kinds.semaphore(this.prefix, checkName(name), options);
  }

  /**
   * A read-write lock by name: `readLock()` is shared by any number of readers, `writeLock()`
   * excludes every other hold; both sides are reentrant per async context, the writer's context may
   * take the read lock (downgrade), and a reader's context asking for the write lock is refused at
   * once (`ERR_LOCK_UPGRADE`). Each reader's hold has its own lease. Writer-preferring, with a read
   * batch after each write release (see docs/read-write-lock.md). Its keys are apart from
   * `lock(name)`'s. Cheap: no I/O. On a Redlock client each side is held on a majority of masters
   * (docs/read-write-lock.md#on-a-redlock-client).
   * @param name a non-empty string of at most 1024 bytes, well-formed UTF-16
   * @param options `maxHoldMs`: the longest a hold of either side may last (see {@link LockOptions})
   * @throws {TypeError | RangeError} for a bad name or options.
   * @example
   * ```ts
   * const config = client.readWriteLock('config');
   * const value = await config.readLock().runExclusive(() => load());
   * await config.writeLock().runExclusive(() => save(next));
   * ```
   */
  readWriteLock(name: string, options?: LockOptions): ReadWriteLock {
    const rw = this.#kinds.readWriteLock(this.prefix, checkName(name));
    bounded(rw.writeLock(), options, 'readWriteLock()');
    bounded(rw.readLock(), options, 'readWriteLock()');
    return rw;
  }

  /**
   * A count-down latch by name (Redisson's RCountDownLatch): `trySetCount(n)` once, `countDown()` by
   * anyone, and `wait()` resolves for every waiter when the count reaches 0, woken by pub/sub. Its
   * keys are apart from `lock(name)`'s. Cheap: no I/O. See docs/latch.md.
   * @param name a non-empty string of at most 1024 bytes, well-formed UTF-16
   * @throws {TypeError | RangeError} for a bad name; {LockError} `ERR_LOCK_UNSUPPORTED` on a Redlock
   *   client (a latch has no quorum version: a count that a majority agrees on needs each count-down
   *   applied once on every master, which a minority that missed one cannot repair).
   * @example
   * ```ts
   * const ready = client.countDownLatch('shards-loaded');
   * await ready.trySetCount(3);
   * await ready.wait({ waitMs: 60_000 }); // resolves after three countDown() calls
   * ```
   */
  countDownLatch(name: string): CountDownLatch {
    return this.#kinds.countDownLatch(this.prefix, checkName(name));
  }

  /**
   * A job by name, run at most once per window across every process (ShedLock's semantics):
   * `job.run(fn)` never waits; it runs `fn(lease)` when the job is free, cuts it at `atMostMs`, and
   * keeps the lock taken until `atLeastMs` after the run's start, by Redis's clock, so nodes whose
   * timers fire apart run it once. Its lock is `lock(name)`'s. Cheap: no I/O. See docs/jobs.md.
   * @param name a non-empty string of at most 1024 bytes, well-formed UTF-16
   * @param options `atMostMs` (required) and `atLeastMs` (default 0, at most `atMostMs`)
   * @throws {TypeError | RangeError} for a bad name or options; {LockError} `ERR_LOCK_UNSUPPORTED` on
   *   a Redlock client and in the Redisson layout (docs/jobs.md says why).
   * @example
   * ```ts
   * const report = client.job('nightly-report', { atLeastMs: 60_000, atMostMs: 600_000 });
   * const result = await report.run((lease) => buildReport({ signal: lease.signal }));
   * ```
   */
  job(name: string, options: JobOptions): Job {
    return this.#kinds.job(this.prefix, checkName(name), checkJobOptions(options));
  }

  /**
   * A leader election by name: `campaign()` waits (woken by pub/sub) until this caller leads and
   * returns its term, whose `epoch` is a fencing token and whose `signal` aborts when the term ends;
   * `current()` reads who leads; `observe()` iterates every change. Cheap: no I/O. See docs/jobs.md.
   * @param name a non-empty string of at most 1024 bytes, well-formed UTF-16
   * @param options `candidate` (default `<hostname>:<pid>`) and `leaseMs` (default the client's)
   * @throws {TypeError | RangeError} for a bad name or options; {LockError} `ERR_LOCK_UNSUPPORTED` on
   *   a Redlock client and in the Redisson layout (docs/jobs.md says why).
   * @example
   * ```ts
   * await using term = await client.leader('scheduler').campaign();
   * await runScheduler({ signal: term.signal, epoch: term.epoch });
   * ```
   */
  leader(name: string, options?: LeaderOptions): Election {
    return this.#kinds.leader(this.prefix, checkName(name), checkLeaderOptions(options));
  }

  /** How many acquires of this client are waiting now (for monitoring). */
  get waiting(): number {
    return this.#runtime.waiting.size;
  }

  /** Whether close() was called. */
  get closed(): boolean {
    return this.#runtime.closed.aborted;
  }

  /**
   * Rejects every pending wait with an `AbortError`, stops every watchdog renewal (held leases abort
   * with `LockLostError` and their locks expire), closes the subscriber and any connection this
   * client created. A Redis client passed in stays open. Idempotent. An acquire called after it
   * rejects with a `LockError` `ERR_LOCK_CLOSED` whose `cause` is that `AbortError`.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#runtime.close(closedError(), new LockLostError('The LockClient was closed: its leases are no longer renewed'));
    // A port over a client passed in leaves it open.
    await Promise.all(this.#ports.map((port) => port.close()));
  }
}

/** The lock, its holds bounded by `options.maxHoldMs` when given (checked before any I/O). */
function bounded(lock: Lock, options: LockOptions | undefined, where = 'lock()'): Lock {
  if (options === undefined) return lock;
  const o = checkOptions(where, options, ['maxHoldMs']);
  return (lock as LockBase<{ lock: string }>).boundHolds(checkMs('maxHoldMs', o.maxHoldMs, MIN_FIXED_LEASE_MS));
}
