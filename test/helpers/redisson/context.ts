// What every primitive of the Redisson stand-in shares: the instance id, script calls on the
// connection passed in, the publish command, pub/sub, the watchdog, and the errors it throws.
import type { Cluster, Redis } from 'ioredis';
import type { Subscriptions } from './pubsub.ts';
import type { Watchdog } from './watchdog.ts';

export type RedisLike = Redis | Cluster;
export type Arg = string | number | Buffer;

/** Java's IllegalMonitorStateException: an unlock by a thread that holds nothing. */
export class IllegalMonitorStateError extends Error {
  override readonly name = 'IllegalMonitorStateError';
}

/** Thrown by a stand-in that was killed or closed (a dead JVM does nothing more). */
export class StandInClosedError extends Error {
  override readonly name = 'StandInClosedError';
  constructor() {
    super('the Redisson stand-in was killed or closed');
  }
}

export function isCluster(redis: RedisLike): redis is Cluster {
  return (redis as { isCluster?: boolean }).isCluster === true;
}

/** Script calls on the caller's connection; refused once the stand-in is dead. */
export class Executor {
  readonly #redis: RedisLike;
  /** The command Redisson passes its scripts for publishing (ARGV): SPUBLISH in sharded mode. */
  readonly publishCommand: 'PUBLISH' | 'SPUBLISH';
  #dead = false;

  constructor(redis: RedisLike, sharded: boolean) {
    this.#redis = redis;
    this.publishCommand = sharded ? 'SPUBLISH' : 'PUBLISH';
  }

  get cluster(): boolean {
    return isCluster(this.#redis);
  }

  get dead(): boolean {
    return this.#dead;
  }

  assertAlive(): void {
    if (this.#dead) throw new StandInClosedError();
  }

  async eval(script: string, keys: readonly string[], args: readonly Arg[]): Promise<unknown> {
    this.assertAlive();
    return this.#redis.eval(script, keys.length, ...keys, ...args);
  }

  async del(key: string): Promise<void> {
    this.assertAlive();
    await this.#redis.del(key);
  }

  kill(): void {
    this.#dead = true;
  }
}

export interface StandInContext {
  /** The instance id: a random UUID, like ServiceManager.getId(). */
  readonly id: string;
  readonly redis: Executor;
  readonly pubsub: Subscriptions;
  readonly watchdog: Watchdog;
  /** lockWatchdogTimeout: the lease of a hold without an explicit one. */
  readonly leaseMs: number;
  /** fairLockWaitTimeout: how long a fair-lock waiter may take to come for the lock. */
  readonly fairWaitMs: number;
}
