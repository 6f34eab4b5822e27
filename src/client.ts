// LockClient: owns the connections it made and the Runtime; the factories of every lock kind.
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { Redis, type RedisOptions } from 'ioredis';
import type { Lock } from './api.ts';
import { closedError, LockError, LockLostError } from './errors.ts';
import { FairLockImpl } from './fair-lock/fair-lock.ts';
import { createFairShared, type FairShared } from './fair-lock/shared.ts';
import { LockCommands } from './lock/commands.ts';
import { LockImpl, type LockShared } from './lock/lock.ts';
import type { LockClientOptions, RedisClient } from './options.ts';
import { Runtime } from './runtime/runtime.ts';
import { watchConnection } from './runtime/script.ts';
import { checkMs, checkName, checkOptions, checkPrefix, checkRedis, DEFAULTS, isRedisClient, MIN_WATCHDOG_LEASE_MS } from './validate.ts';

/**
 * Fail-fast defaults of the connections relock makes itself (the user's options win, but for
 * `enableOfflineQueue`: relock's own connections always queue while connecting, so the first
 * acquire need not wait for 'ready'): a command issued while Redis is unreachable fails after two
 * reconnection attempts (about 0.3 s when the port refuses), and no command waits more than 5 s for
 * an answer (a partition, a frozen server), instead of ioredis's 20 retries and no time limit.
 */
export const CONNECTION_DEFAULTS = Object.freeze({
  maxRetriesPerRequest: 2,
  connectTimeout: 2_000,
  commandTimeout: 5_000,
  retryStrategy: (times: number) => Math.min(times * 100, 1_000),
}) satisfies RedisOptions;

/**
 * What relock's subscriber needs whatever the user's options say: it connects at the first wait,
 * queues SUBSCRIBE until connected, resubscribes itself and reconnects.
 */
const SUBSCRIBER_OPTIONS = {
  lazyConnect: true,
  autoResubscribe: false,
  enableOfflineQueue: true,
  maxRetriesPerRequest: CONNECTION_DEFAULTS.maxRetriesPerRequest,
  retryStrategy: CONNECTION_DEFAULTS.retryStrategy,
  commandTimeout: undefined,
} satisfies RedisOptions;

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
  /** The key namespace. */
  readonly prefix: string;
  /** The watchdog lease in milliseconds. */
  readonly leaseMs: number;

  readonly #redis: RedisClient;
  readonly #owned: boolean;
  readonly #runtime: Runtime;
  readonly #lock: LockShared;
  #fair: FairShared | undefined;
  #closing: Promise<void> | undefined;

  /**
   * @throws {TypeError | RangeError} for bad options, naming the option, before any connection is made.
   */
  constructor(options?: LockClientOptions) {
    super();
    const o = checkOptions('LockClient', options, ['redis', 'prefix', 'leaseMs', 'fenceTtlMs']);
    const redis = checkRedis(o.redis);
    this.prefix = checkPrefix(o.prefix);
    this.leaseMs = checkMs('leaseMs', o.leaseMs, MIN_WATCHDOG_LEASE_MS) ?? DEFAULTS.leaseMs;
    // Not a timer: a fence key may outlive its last acquisition by up to a year.
    const fenceTtlMs = checkMs('fenceTtlMs', o.fenceTtlMs, 1, 366 * 24 * 3_600_000) ?? DEFAULTS.fenceTtlMs;

    this.#owned = !isRedisClient(redis);
    this.#redis = isRedisClient(redis)
      ? redis
      : this.#own(
          (typeof redis === 'string' ? new Redis(redis, CONNECTION_DEFAULTS) : new Redis({ ...CONNECTION_DEFAULTS, ...redis, enableOfflineQueue: true } as never)) as unknown as RedisClient,
        );
    const source = this.#redis;
    this.#runtime = new Runtime({
      clientId: this.id,
      leaseMs: this.leaseMs,
      fenceTtlMs,
      redis: source,
      events: this as EventEmitter,
      connectSubscriber: () =>
        this.#own(
          (source.isCluster === true
            ? // ioredis 5 replaces redisOptions wholesale on duplicate(): keep the user's (auth, TLS).
              source.duplicate(undefined, { enableOfflineQueue: true, redisOptions: { ...source.options?.redisOptions, ...SUBSCRIBER_OPTIONS } })
            : source.duplicate(SUBSCRIBER_OPTIONS)) as RedisClient,
        ),
    });
    const commands = new LockCommands(this.#runtime.runner, this.#runtime.publish);
    this.#lock = {
      runtime: this.#runtime,
      commands,
      // A Cluster cannot run one script over keys of several slots: renew one lock per call there.
      renewer: { renew: (batch, leaseMs) => commands.renew(batch, leaseMs), batch: this.#runtime.cluster ? 1 : 500 },
    };
  }

  /** Connections this client made report their errors through the client instead of ioredis's console warning. */
  #own(connection: RedisClient): RedisClient {
    const watch = watchConnection(connection);
    connection.on('error', (error: Error) => {
      watch.lastError = error;
      this.#runtime.error(error);
    });
    return connection;
  }

  /**
   * A lock by name. Cheap: no I/O, and two calls with one name give locks that share everything.
   * @param name a non-empty string of at most 1024 bytes, well-formed UTF-16
   * @throws {TypeError | RangeError} for a bad name.
   */
  lock(name: string): Lock {
    return new LockImpl(this.#lock, this.prefix, checkName(name));
  }

  /**
   * A fair lock by name: the same `Lock`, but waiters from every process are served in the order
   * they started waiting, and a release hands the lock directly to the head of the queue (no second
   * round trip). `tryAcquire()` never jumps a non-empty queue. Uncontended it costs what `lock()`
   * does (one script); a hand-off costs one more (the grantee's confirm). Pick it when waits must be
   * short and fair under contention (see docs/fair-lock.md). Its keys are apart from `lock(name)`'s:
   * the two never exclude each other. Cheap: no I/O.
   * @param name a non-empty string of at most 1024 bytes, well-formed UTF-16
   * @throws {TypeError | RangeError} for a bad name.
   * @throws {LockError} on a Redis Cluster: a grant needs sharded pub/sub (PUBLISH counts only the
   *   receivers of one node), which relock does not use yet.
   * @example
   * ```ts
   * const queue = client.fairLock('printer');
   * await queue.runExclusive(() => print(job)); // served in arrival order across processes
   * ```
   */
  fairLock(name: string): Lock {
    const checked = checkName(name);
    if (this.#runtime.cluster) {
      throw new LockError('client.fairLock() does not run on a Redis Cluster yet: its grants need sharded pub/sub (SPUBLISH), which relock does not use yet', {
        lockName: checked,
      });
    }
    this.#fair ??= createFairShared(this.#runtime);
    return new FairLockImpl(this.#fair, this.prefix, checked);
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
   * client created. A Redis client passed in stays open. Idempotent.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#runtime.close(closedError(), new LockLostError('The LockClient was closed: its leases are no longer renewed'));
    if (!this.#owned) return;
    // QUIT lets replies in flight arrive, but waits forever on a Redis that is gone (it sits in the
    // offline queue): only a ready connection gets it, for a second at most.
    if (this.#redis.status === 'ready') {
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise((resolve) => (timer = setTimeout(resolve, 1_000)));
      await Promise.race([this.#redis.quit().catch(() => undefined), bound]);
      clearTimeout(timer);
    }
    this.#redis.disconnect();
  }
}
