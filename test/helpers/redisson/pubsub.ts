// The stand-in's pub/sub, as Redisson's PublishSubscribeService and LockPubSub/SemaphorePubSub do
// it: one entry per channel with a latch of permits; (S)SUBSCRIBE on connections of its own (one per
// shard owner for sharded channels on a Cluster); messages parsed as 64-bit integers.
import { Redis } from 'ioredis';
import { isCluster, StandInClosedError, type RedisLike } from './context.ts';
import { keySlot } from './names.ts';

/** What a channel's messages mean: lock (0 wakes one, 1 wakes all) or semaphore (a permit count). */
export type EntryKind = 'lock' | 'semaphore';

/** RedissonLockEntry: a latch whose permits outlive a message nobody waited for. */
export class Entry {
  #permits = 0;
  #waiters: (() => void)[] = [];
  /** Local subscribers (RedissonLockEntry.acquired()): how many a semaphore message may wake. */
  subscribers = 0;
  #dead = false;

  /** latch.release(n): wakes up to n waiters, keeps the rest as permits. */
  release(n: number): void {
    for (let i = 0; i < n; i++) {
      const waiter = this.#waiters.shift();
      if (waiter) waiter();
      else this.#permits++;
    }
  }

  /** latch.release(queueLength): wakes every waiter, keeps nothing. */
  releaseAll(): void {
    this.release(this.#waiters.length);
  }

  /** latch.tryAcquire(ms): a permit, or a message, or the end of ms (Infinity: no limit). */
  wait(ms: number): Promise<void> {
    if (this.#dead) return Promise.reject(new StandInClosedError());
    if (this.#permits > 0) {
      this.#permits--;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const waiter = () => {
        clearTimeout(timer);
        if (this.#dead) reject(new StandInClosedError());
        else resolve();
      };
      this.#waiters.push(waiter);
      if (Number.isFinite(ms)) {
        timer = setTimeout(() => {
          this.#waiters = this.#waiters.filter((other) => other !== waiter);
          waiter();
        }, Math.max(0, ms)).unref();
      }
    });
  }

  kill(): void {
    this.#dead = true;
    for (const waiter of this.#waiters.splice(0)) waiter();
  }
}

interface Subscription {
  readonly entry: Entry;
  readonly kind: EntryKind;
  /** The connection, once the server confirmed the subscription. */
  readonly ready: Promise<RedisLike>;
}

export class Subscriptions {
  readonly #redis: RedisLike;
  readonly #sharded: boolean;
  readonly #channels = new Map<string, Subscription>();
  /** 'all' (one connection) or a shard owner's host:port. */
  readonly #connections = new Map<string, RedisLike>();
  readonly #unparsable: { channel: string; message: string }[] = [];
  #dead = false;

  constructor(redis: RedisLike, sharded: boolean) {
    this.#redis = redis;
    this.#sharded = sharded;
  }

  /** Messages Redisson could not parse as a 64-bit integer (its listener would fail on them). */
  get unparsable(): readonly { channel: string; message: string }[] {
    return this.#unparsable;
  }

  /** Subscribes (once per channel), counts one more local subscriber and returns the channel's entry. */
  async subscribe(channel: string, kind: EntryKind): Promise<Entry> {
    if (this.#dead) throw new StandInClosedError();
    let subscription = this.#channels.get(channel);
    if (!subscription) {
      // Registered before any await, so that concurrent callers share one SUBSCRIBE.
      const ready = this.#open(channel);
      ready.catch(() => undefined);
      subscription = { entry: new Entry(), kind, ready };
      this.#channels.set(channel, subscription);
    }
    subscription.entry.subscribers++;
    try {
      await subscription.ready;
    } catch (error) {
      this.unsubscribe(channel);
      throw error;
    }
    return subscription.entry;
  }

  /** One local subscriber fewer; the last one unsubscribes the channel. */
  unsubscribe(channel: string): void {
    const subscription = this.#channels.get(channel);
    if (!subscription || --subscription.entry.subscribers > 0) return;
    this.#channels.delete(channel);
    if (this.#dead) return;
    subscription.ready
      .then((connection) => (this.#sharded ? connection.sunsubscribe(channel) : connection.unsubscribe(channel)))
      .catch(() => undefined);
  }

  /** Stops listening at once: waiters fail, connections are cut. */
  kill(): void {
    this.#dead = true;
    for (const { entry } of this.#channels.values()) entry.kill();
    this.#channels.clear();
    for (const connection of this.#connections.values()) connection.disconnect();
    this.#connections.clear();
  }

  async #open(channel: string): Promise<RedisLike> {
    const connection = await this.#connectionFor(channel);
    await (this.#sharded ? connection.ssubscribe(channel) : connection.subscribe(channel));
    return connection;
  }

  async #connectionFor(channel: string): Promise<RedisLike> {
    const key = this.#sharded && isCluster(this.#redis) ? await this.#shardOwner(channel) : 'all';
    let connection = this.#connections.get(key);
    if (!connection) {
      connection = this.#connect(key);
      connection.on('error', () => undefined);
      connection.on(this.#sharded ? 'smessage' : 'message', (from: string, message: string) => this.#deliver(from, message));
      this.#connections.set(key, connection);
    }
    return connection;
  }

  #connect(key: string): RedisLike {
    const redis = this.#redis;
    if (!isCluster(redis)) return redis.duplicate();
    if (key === 'all') return redis.duplicate();
    // A shard owner's own connection, with the Cluster's per-node options (password, TLS); `as never`:
    // ioredis 6's option types clash with exactOptionalPropertyTypes.
    const at = key.lastIndexOf(':');
    return new Redis(Number(key.slice(at + 1)), key.slice(0, at), (redis.options.redisOptions ?? {}) as never);
  }

  /** host:port of the master serving the channel's slot: the Cluster client's map, else CLUSTER SLOTS. */
  async #shardOwner(channel: string): Promise<string> {
    const slot = keySlot(channel);
    const known = isCluster(this.#redis) ? this.#redis.slots[slot]?.[0] : undefined;
    if (known) return known;
    const ranges = (await this.#redis.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][];
    const range = ranges.find(([from, to]) => slot >= from && slot <= to);
    if (!range) throw new Error(`no master serves slot ${slot}`);
    return `${range[2][0]}:${range[2][1]}`;
  }

  #deliver(channel: string, message: string): void {
    const subscription = this.#channels.get(channel);
    if (!/^-?\d{1,19}$/.test(message)) {
      this.#unparsable.push({ channel, message });
      return;
    }
    if (!subscription) return;
    const value = Number(message);
    if (subscription.kind === 'semaphore') subscription.entry.release(Math.max(0, Math.min(subscription.entry.subscribers, value)));
    else if (value === 0) subscription.entry.release(1);
    else if (value === 1) subscription.entry.releaseAll();
  }
}
