// The Redisson stand-in: one "Java client instance" (its UUID, watchdog and pub/sub) over an ioredis
// connection or Cluster passed in, speaking Redisson's lock protocol so relock can be tested against it.
import { randomUUID } from 'node:crypto';
import { Executor, type RedisLike, type StandInContext } from './context.ts';
import { FairLockStandIn, type FairLockOptions } from './fair-lock.ts';
import { FencedLockStandIn, LockStandIn } from './lock.ts';
import { Subscriptions } from './pubsub.ts';
import { ReadWriteLockStandIn } from './rw-lock.ts';
import { PermitSemaphoreStandIn } from './semaphore.ts';
import { Watchdog } from './watchdog.ts';

export interface StandInOptions {
  /** SPUBLISH/SSUBSCRIBE, as Redisson's AUTO mode on a Redis 7+ Cluster. @default false */
  readonly sharded?: boolean;
  /** lockWatchdogTimeout in ms: the lease of holds without an explicit one, renewed every third. @default 30000 */
  readonly leaseMs?: number;
  /** fairLockWaitTimeout in ms. @default 300000 */
  readonly fairWaitMs?: number;
}

export class RedissonStandIn {
  /** The instance id (a random UUID): holders are <id>:<threadId>. */
  readonly id: string = randomUUID();
  readonly #ctx: StandInContext;

  constructor(redis: RedisLike, options: StandInOptions = {}) {
    const leaseMs = options.leaseMs ?? 30_000;
    const executor = new Executor(redis, options.sharded ?? false);
    this.#ctx = {
      id: this.id,
      redis: executor,
      pubsub: new Subscriptions(redis, options.sharded ?? false),
      watchdog: new Watchdog(executor, leaseMs),
      leaseMs,
      fairWaitMs: options.fairWaitMs ?? 300_000,
    };
  }

  /** getLock(name), or getFencedLock(name) with fenced. */
  lock(name: string, options: { readonly fenced: true }): FencedLockStandIn;
  lock(name: string, options?: { readonly fenced?: boolean }): LockStandIn;
  lock(name: string, options: { readonly fenced?: boolean } = {}): LockStandIn {
    return options.fenced ? new FencedLockStandIn(this.#ctx, name) : new LockStandIn(this.#ctx, name);
  }

  /** getFairLock(name). */
  fairLock(name: string, options: FairLockOptions = {}): FairLockStandIn {
    return new FairLockStandIn(this.#ctx, name, options);
  }

  /** getReadWriteLock(name). */
  readWriteLock(name: string): ReadWriteLockStandIn {
    return new ReadWriteLockStandIn(this.#ctx, name);
  }

  /** getPermitExpirableSemaphore(name). */
  permitSemaphore(name: string): PermitSemaphoreStandIn {
    return new PermitSemaphoreStandIn(this.#ctx, name);
  }

  /** The publish command its scripts are given. */
  get publishCommand(): 'PUBLISH' | 'SPUBLISH' {
    return this.#ctx.redis.publishCommand;
  }

  /** Holds (lock name and thread) the watchdog renews now. */
  get renewing(): number {
    return this.#ctx.watchdog.holds;
  }

  /** Messages on its channels that Redisson could not parse as a 64-bit integer. */
  get unparsableMessages(): readonly { readonly channel: string; readonly message: string }[] {
    return this.#ctx.pubsub.unparsable;
  }

  /**
   * A dead JVM: no more renewals, subscriptions cut, waiters fail with StandInClosedError, every
   * later call too. Nothing is released: its holds run out at their lease end, its fair-lock queue
   * entries at their deadlines.
   */
  kill(): void {
    this.#ctx.redis.kill();
    void this.#ctx.watchdog.stop();
    this.#ctx.pubsub.kill();
  }

  /** kill(), after waiting for a renewal in flight (for a suite's teardown). */
  async close(): Promise<void> {
    await this.#ctx.watchdog.stop();
    this.kill();
  }
}

/** A Redisson client instance's stand-in over `redis` (not closed by it: the caller owns the connection). */
export function redissonStandIn(redis: RedisLike, options: StandInOptions = {}): RedissonStandIn {
  return new RedissonStandIn(redis, options);
}
