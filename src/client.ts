// LockClient: the only owner of connections and timers.
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { debuglog } from 'node:util';
import { Redis } from 'ioredis';
import { closedError, LockError, LockLostError } from './errors.ts';
import { LockImpl, type Lock, type LockHost, type Scope } from './lock.ts';
import { checkMs, checkName, checkOptions, checkPrefix, checkRedis, DEFAULTS, isRedisClient } from './options.ts';
import type { LockClientOptions, RedisClient } from './options.ts';
import { Commands } from './scripts.ts';
import { Subscriber } from './subscriber.ts';
import { WaitQueues } from './waiters.ts';
import { Watchdog } from './watchdog.ts';

const log = debuglog('relock:client');

/** Options relock sets on its subscriber: it resubscribes itself, then wakes every waiter. */
const SUBSCRIBER_OPTIONS = { lazyConnect: true, autoResubscribe: false } as const;

/**
 * A connection to Redis for locks: owns at most one command connection (only one it created) and
 * one shared subscriber connection, whatever the number of locks and waiters.
 *
 * Emits `'error'` with connection errors of the connections it created and of renewals, when
 * someone listens (they are otherwise only logged under `NODE_DEBUG=relock:*`), and `'warning'`
 * (a `LockError`) once, at the first acquire, when the server's `maxmemory-policy` can evict lock keys.
 *
 * @example
 * ```ts
 * const client = new LockClient({ redis: 'redis://127.0.0.1:6379' });
 * await client.lock('report:nightly').runExclusive(() => buildReport());
 * await client.close();
 * ```
 */
export class LockClient extends EventEmitter {
  /** A random, unguessable id (UUID) for this client; the first half of every owner field it writes. */
  readonly id: string = randomUUID();
  /** The key namespace. */
  readonly prefix: string;
  /** The watchdog lease in milliseconds. */
  readonly leaseMs: number;

  readonly #redis: RedisClient;
  readonly #owned: boolean;
  readonly #host: LockHost;
  readonly #closed = new AbortController();
  readonly #pending = new Set<AbortController>();
  readonly #subscriber: Subscriber;
  readonly #watchdog: Watchdog;
  readonly #queues = new WaitQueues();
  #drops = 0;
  #used = false;
  #closing: Promise<void> | undefined;
  readonly #onClose = () => {
    this.#drops++;
  };

  /**
   * @throws {TypeError | RangeError} for bad options, naming the option, before any connection is made.
   */
  constructor(options?: LockClientOptions) {
    super();
    const o = checkOptions('LockClient', options, ['redis', 'prefix', 'leaseMs', 'fenceTtlMs']);
    const redis = checkRedis(o.redis);
    this.prefix = checkPrefix(o.prefix);
    this.leaseMs = checkMs('leaseMs', o.leaseMs, 3) ?? DEFAULTS.leaseMs;
    // Not a timer: a fence key may outlive its last acquisition by up to a year.
    const fenceTtlMs = checkMs('fenceTtlMs', o.fenceTtlMs, 1, 366 * 24 * 3_600_000) ?? DEFAULTS.fenceTtlMs;

    this.#owned = !isRedisClient(redis);
    // new Redis(url) and new Redis(options) are two overloads of one constructor.
    this.#redis = isRedisClient(redis) ? redis : this.#own(new Redis(redis as string) as unknown as RedisClient);
    const source = this.#redis;
    const cluster = source.isCluster === true;
    this.#subscriber = new Subscriber(
      () =>
        this.#own(
          (cluster
            ? // ioredis 5 replaces redisOptions wholesale on duplicate(): keep the user's (auth, TLS).
              source.duplicate(undefined, { redisOptions: { ...source.options?.redisOptions, ...SUBSCRIBER_OPTIONS } })
            : source.duplicate(SUBSCRIBER_OPTIONS)) as RedisClient,
        ),
      {
        message: (channel) => this.#queues.wakeHead(channel),
        resubscribed: () => this.#queues.wakeAll(),
        error: (error) => this.#error(error),
      },
    );
    const commands = new Commands(this.#redis);
    // A Cluster cannot run one script over keys of several slots: renew one lock per call there.
    this.#watchdog = new Watchdog(commands, this.leaseMs, { onError: (error) => this.#error(error), ...(cluster ? { batch: 1 } : {}) });
    this.#redis.on('close', this.#onClose);
    this.#host = {
      id: this.id,
      prefix: this.prefix,
      leaseMs: this.leaseMs,
      fenceTtlMs,
      commands,
      subscriber: this.#subscriber,
      queues: this.#queues,
      watchdog: this.#watchdog,
      scope: new AsyncLocalStorage<Scope>(),
      closed: this.#closed.signal,
      pending: this.#pending,
      drops: () => this.#drops,
      firstUse: () => {
        if (this.#used) return;
        this.#used = true;
        this.#checkEviction();
      },
    };
  }

  /**
   * An evicted lock key is a lock silently lost: warn when the server's maxmemory-policy may evict
   * keys with a TTL (every lock key has one). A server that refuses CONFIG (ACL, managed Redis) is
   * not second-guessed.
   */
  #checkEviction(): void {
    const config = (this.#redis as { config?: (...args: string[]) => Promise<unknown> }).config;
    if (typeof config !== 'function' || this.#redis.isCluster) return;
    config.call(this.#redis, 'GET', 'maxmemory-policy').then(
      (reply) => {
        // RESP2 answers [name, value]; RESP3 a map.
        const policy = String(
          (Array.isArray(reply) ? reply[1] : (reply as Record<string, unknown> | null)?.['maxmemory-policy']) ?? '',
        );
        if (policy === '' || policy === 'noeviction') return;
        const warning = new LockError(
          `Redis maxmemory-policy is "${policy}": under memory pressure Redis may evict lock keys, and an evicted lock is silently lost. Use "noeviction" on the Redis that holds locks.`,
        );
        log('%s', warning.message);
        this.emit('warning', warning);
      },
      (error: Error) => log('CONFIG GET maxmemory-policy failed: %s', error.message),
    );
  }

  /** Connections this client made report their errors through the client instead of ioredis's console warning. */
  #own(connection: RedisClient): RedisClient {
    connection.on('error', (error: Error) => this.#error(error));
    return connection;
  }

  #error(error: Error): void {
    log('%s', error.message);
    if (this.listenerCount('error') > 0) this.emit('error', error);
  }

  /**
   * A lock by name. Cheap: no I/O, and two calls with one name give locks that share everything.
   * @param name a non-empty string of at most 1024 bytes
   * @throws {TypeError | RangeError} for a bad name.
   */
  lock(name: string): Lock {
    return new LockImpl(this.#host, checkName(name));
  }

  /** How many acquires of this client are waiting now (for monitoring). */
  get waiting(): number {
    return this.#queues.size;
  }

  /** Whether close() was called. */
  get closed(): boolean {
    return this.#closed.signal.aborted;
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
    const error = closedError();
    this.#closed.abort(error);
    for (const stop of this.#pending) stop.abort(error);
    this.#watchdog.stop(new LockLostError('The LockClient was closed: its leases are no longer renewed'));
    this.#redis.off('close', this.#onClose);
    await this.#subscriber.close();
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
