// Lock and Lease: acquisition, waiting, reentrancy and release. Talks to Redis only through
// Commands (scripts.ts) and the Subscriber; every long-lived resource belongs to the client.
import { randomUUID } from 'node:crypto';
import type { AsyncLocalStorage } from 'node:async_hooks';
import { Mutex } from 'async-mutex';
import pTimeout from 'p-timeout';
import { LockLostError, LockNotHeldError, LockTimeoutError } from './errors.ts';
import { lockKeys, type LockKeys } from './keys.ts';
import { checkFunction, checkMs, checkOptions, checkSignal, checkWaitMs } from './options.ts';
import type { AcquireOptions, TryAcquireOptions } from './options.ts';
import type { AcquireReply, Commands } from './scripts.ts';
import type { Subscriber } from './subscriber.ts';
import { Waiter, type WaitQueues } from './waiters.ts';
import type { Watched, Watchdog } from './watchdog.ts';

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
   * Waits until the lock is held by this async context, for at most `waitMs`.
   * @throws {LockTimeoutError} when `waitMs` elapsed first.
   * @throws {TypeError | RangeError} for bad options, before any I/O.
   */
  acquire(options?: AcquireOptions): Promise<Lease>;
  /** Tries once: the lease, or null when someone else holds the lock. */
  tryAcquire(options?: TryAcquireOptions): Promise<Lease | null>;
  /**
   * Acquires, runs `fn(lease)` in the lease's async context, and releases, whatever `fn` does.
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

/** Lock key -> the hold that the current async context has on it. */
export type Scope = ReadonlyMap<string, Hold>;

/** What a lock needs from its client. */
export interface LockHost {
  readonly id: string;
  readonly prefix: string;
  readonly leaseMs: number;
  readonly fenceTtlMs: number;
  readonly commands: Commands;
  readonly subscriber: Subscriber;
  readonly queues: WaitQueues;
  readonly watchdog: Watchdog;
  readonly scope: AsyncLocalStorage<Scope>;
  /** Aborted by close(), with the error pending waits reject with. */
  readonly closed: AbortSignal;
  /** The controllers of the acquires under way: close() aborts them all. */
  readonly pending: Set<AbortController>;
  /** How often the command connection has dropped so far. */
  drops(): number;
  /** Called before every acquire; the client checks the server once, beside the first one. */
  firstUse(): void;
}

/** One owner's hold on one lock: shared by the leases of its nested acquisitions. */
class Hold implements Watched {
  readonly owner: string;
  /** Why the hold was lost, once it was. */
  lost: LockLostError | undefined;
  /** Made when someone first asks for the signal: most leases are released without anyone asking. */
  #controller: AbortController | undefined;
  #mutex: Mutex | undefined;
  count = 0;
  token = 0;
  held = false;
  deadline = Number.POSITIVE_INFINITY;

  constructor(
    readonly name: string,
    readonly keys: LockKeys,
    clientId: string,
    public renewable: boolean,
  ) {
    this.owner = `${clientId}:${randomUUID()}`;
  }

  lose(error: LockLostError): void {
    if (this.lost) return;
    this.lost = error;
    this.#controller?.abort(error);
  }

  /** Serialises re-entries and releases, so each sends the count the one before left. */
  get mutex(): Mutex {
    this.#mutex ??= new Mutex();
    return this.#mutex;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.lost) this.#controller.abort(this.lost);
    }
    return this.#controller.signal;
  }
}

class LeaseImpl implements Lease {
  readonly #lock: LockImpl;
  readonly #hold: Hold;
  #released = false;

  constructor(
    lock: LockImpl,
    hold: Hold,
    readonly holdCount: number,
  ) {
    this.#lock = lock;
    this.#hold = hold;
  }

  get name(): string {
    return this.#hold.name;
  }

  get fencingToken(): number {
    return this.#hold.token;
  }

  get signal(): AbortSignal {
    return this.#hold.signal;
  }

  /** Why the hold was lost, if it was: the signal's reason, without making a signal. */
  get lost(): LockLostError | undefined {
    return this.#hold.lost;
  }

  async release(): Promise<void> {
    if (this.#released) throw new LockNotHeldError(`This lease of lock "${this.name}" was released already`, { lockName: this.name });
    this.#released = true;
    try {
      await this.#hold.mutex.runExclusive(() => this.#lock.releaseHold(this.#hold));
    } catch (error) {
      // A release that never reached Redis may be tried again.
      if (!(error instanceof LockNotHeldError)) this.#released = false;
      throw error;
    }
  }

  async run<T>(fn: () => T | Promise<T>): Promise<T> {
    checkFunction('fn', fn);
    return this.#lock.runIn(this.#hold, fn);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (!this.#released) await this.release();
  }
}

/** The promise, or a rejection with the signal's reason as soon as it aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

type Attempt = { readonly lease: Lease } | { readonly pttl: number };

export class LockImpl implements Lock {
  readonly #host: LockHost;
  readonly #keys: LockKeys;

  constructor(
    host: LockHost,
    readonly name: string,
  ) {
    this.#host = host;
    this.#keys = lockKeys(host.prefix, name);
  }

  async acquire(options?: AcquireOptions): Promise<Lease> {
    const o = checkOptions('acquire()', options, ['waitMs', 'leaseMs', 'signal']);
    return this.#acquire(checkWaitMs(o.waitMs), checkMs('leaseMs', o.leaseMs, 1), checkSignal(o.signal));
  }

  async tryAcquire(options?: TryAcquireOptions): Promise<Lease | null> {
    const o = checkOptions('tryAcquire()', options, ['leaseMs']);
    try {
      return await this.#acquire(0, checkMs('leaseMs', o.leaseMs, 1), undefined);
    } catch (error) {
      if (error instanceof LockTimeoutError) return null;
      throw error;
    }
  }

  async runExclusive<T>(fn: (lease: Lease) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    checkFunction('fn', fn);
    const lease = (await this.acquire(options)) as LeaseImpl;
    let result: T;
    try {
      result = await lease.run(() => fn(lease));
    } catch (error) {
      await lease.release().catch(() => undefined);
      throw error;
    }
    if (lease.lost) {
      await lease.release().catch(() => undefined);
      throw lease.lost;
    }
    try {
      await lease.release();
    } catch (error) {
      // Gone by the time fn finished, unnoticed until now: the hold ended while fn ran.
      if (!(error instanceof LockNotHeldError)) throw error;
      throw new LockLostError(`Lock "${this.name}" was lost while its callback ran`, { cause: error, lockName: this.name });
    }
    return result;
  }

  async isLocked(): Promise<boolean> {
    return this.#host.commands.isLocked(this.#keys);
  }

  async isHeldByCurrentContext(): Promise<boolean> {
    return (await this.holdCount()) > 0;
  }

  async holdCount(): Promise<number> {
    const hold = this.#scopeHold();
    return hold ? this.#host.commands.holdCount(this.#keys, hold.owner) : 0;
  }

  async remainingTtlMs(): Promise<number | null> {
    return this.#host.commands.remainingTtlMs(this.#keys);
  }

  async forceUnlock(): Promise<boolean> {
    const deleted = await this.#host.commands.forceRelease(this.#keys);
    this.#host.watchdog.loseKey(
      this.#keys.lock,
      new LockLostError(`Lock "${this.name}" was force-unlocked`, { lockName: this.name }),
    );
    return deleted;
  }

  /** Runs fn in a scope that adds this hold to the current one. */
  runIn<T>(hold: Hold, fn: () => T | Promise<T>): Promise<T> {
    const scope = new Map(this.#host.scope.getStore());
    scope.set(this.#keys.lock, hold);
    return this.#host.scope.run(scope, async () => fn());
  }

  /** Gives back one level of the hold; the caller holds hold.mutex. */
  async releaseHold(hold: Hold): Promise<void> {
    const { commands, watchdog } = this.#host;
    const believed = hold.count;
    const last = believed === 1;
    if (believed === 0) throw this.#notHeld();
    if (last) {
      // Renewal is cancelled before the release is sent, and one in flight lands first. A lost hold
      // skips the wait: its renewal may hang on an unreachable Redis, and there is nothing to protect.
      watchdog.stopRenewing(hold);
      if (!hold.lost) await watchdog.settled();
    }
    const lostBefore = hold.lost !== undefined;
    const drops = this.#host.drops();
    let left = await commands.release(this.#keys, hold.owner, believed);
    if (left === -1 && last && !lostBefore && this.#host.drops() !== drops) {
      // The connection dropped while the release was out and ioredis sent it again: the first
      // attempt went through, so the retry found nothing. The lock is released. (Not for a hold
      // already signalled lost: that one was gone before the release was sent.)
      left = 0;
    }
    if (left === -1) {
      hold.count = 0;
      watchdog.lose(hold, new LockLostError(`Lock "${this.name}" was lost before its release`, { lockName: this.name }));
      throw this.#notHeld();
    }
    hold.count = left;
    if (left === 0) {
      hold.held = false;
      watchdog.delete(hold);
    }
  }

  #notHeld(): LockNotHeldError {
    return new LockNotHeldError(`Lock "${this.name}" is not held by this owner (expired, force-unlocked, or released)`, {
      lockName: this.name,
    });
  }

  #scopeHold(): Hold | undefined {
    const hold = this.#host.scope.getStore()?.get(this.#keys.lock);
    return hold && hold.count > 0 ? hold : undefined;
  }

  async #acquire(waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Lease> {
    const { closed } = this.#host;
    closed.throwIfAborted();
    signal?.throwIfAborted();
    this.#host.firstUse();
    const hold = this.#scopeHold();
    if (hold) return this.#reenter(hold, leaseMs);

    // One controller ends this acquire: the caller's signal, close() (which aborts every pending
    // one from a set: a listener each on one client-wide signal would cost O(waiters) to add), or
    // the timeout.
    const stop = new AbortController();
    const onAbort = () => stop.abort(signal!.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    this.#host.pending.add(stop);
    const waiting = this.#wait(waitMs, leaseMs, stop.signal);
    try {
      // waitMs 0 tries once: the attempt itself decides, there is no timer to race it; nor is there
      // one without a finite wait, where only the signals can end it.
      if (waitMs === 0 || waitMs === Number.POSITIVE_INFINITY) return await untilAborted(waiting, stop.signal);
      return await pTimeout(waiting, {
        milliseconds: waitMs,
        fallback: () => {
          throw this.#timeout(waitMs);
        },
        signal: stop.signal,
      });
    } catch (error) {
      stop.abort(error);
      waiting.catch(() => undefined);
      throw error;
    } finally {
      this.#host.pending.delete(stop);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  #timeout(waitMs: number): LockTimeoutError {
    return new LockTimeoutError(`Lock "${this.name}" was not acquired within ${waitMs} ms`, { lockName: this.name });
  }

  async #reenter(hold: Hold, leaseMs: number | undefined): Promise<Lease> {
    return hold.mutex.runExclusive(async () => {
      if (hold.lost) throw hold.lost;
      if (hold.count === 0) throw this.#notHeld();
      const sentAt = performance.now();
      const reply = await this.#host.commands.acquire(this.#keys, hold.owner, leaseMs ?? 0, hold.count, this.#host.fenceTtlMs);
      if (!reply.acquired) {
        const error = new LockLostError(`Lock "${this.name}" was lost before a nested acquire`, { lockName: this.name });
        hold.count = 0;
        this.#host.watchdog.lose(hold, error);
        throw error;
      }
      hold.count = reply.count;
      // The script only ever lengthens a fixed lease; so does the local deadline.
      if (leaseMs !== undefined && !hold.renewable) this.#host.watchdog.lengthen(hold, sentAt, leaseMs);
      return new LeaseImpl(this, hold, reply.count);
    });
  }

  /** The first acquisition of a fresh context: try, then subscribe, queue, and sleep between tries. */
  async #wait(waitMs: number, leaseMs: number | undefined, stop: AbortSignal): Promise<Lease> {
    const { subscriber, queues } = this.#host;
    const channel = this.#keys.channel;
    let subscribed = false;
    let waiter: Waiter | undefined;
    let acquired = false;
    try {
      // Barge only when no local waiter is queued for this lock (or when trying once).
      if (waitMs === 0 || queues.isEmpty(channel)) {
        const attempt = await this.#attempt(leaseMs, stop);
        if ('lease' in attempt) return ((acquired = true), attempt.lease);
        if (waitMs === 0) throw this.#timeout(0);
      }
      await subscriber.subscribe(channel);
      subscribed = true;
      stop.throwIfAborted();
      waiter = new Waiter();
      // The head tries at once: a release may have slipped between the first try and SUBSCRIBE.
      let tryNow = queues.join(channel, waiter);
      let pttl = this.#host.leaseMs;
      for (;;) {
        if (tryNow) {
          const attempt = await this.#attempt(leaseMs, stop);
          if ('lease' in attempt) return ((acquired = true), attempt.lease);
          pttl = attempt.pttl;
        }
        // Until a release wakes us, or the holder's lease runs out (a crash or a lost message); a
        // millisecond more, as a Node timer may fire up to one early against Redis's expiry.
        await waiter.sleep(pttl >= 0 ? pttl + 1 : pttl === -2 ? 0 : this.#host.leaseMs, stop);
        tryNow = true;
      }
    } finally {
      if (waiter) queues.leave(channel, waiter, acquired ? (leaseMs ?? this.#host.leaseMs) : undefined);
      if (subscribed) subscriber.unsubscribe(channel);
    }
  }

  /** One acquire script call for a fresh hold (a new context id each time). */
  async #attempt(leaseMs: number | undefined, stop: AbortSignal): Promise<Attempt> {
    const { commands, watchdog } = this.#host;
    const lease = leaseMs ?? this.#host.leaseMs;
    const hold = new Hold(this.name, this.#keys, this.#host.id, leaseMs === undefined);
    // Renewal is registered before the acquire is sent, and only while an attempt is out: a waiter
    // between attempts holds nothing to renew.
    if (hold.renewable) watchdog.add(hold);
    const sentAt = performance.now();
    const drops = this.#host.drops();
    let reply: AcquireReply;
    try {
      reply = await commands.acquire(this.#keys, hold.owner, lease, 0, this.#host.fenceTtlMs);
    } catch (error) {
      watchdog.delete(hold);
      throw error;
    }
    if (!reply.acquired) {
      watchdog.delete(hold);
      // After a reconnect, ioredis may have resent this attempt after a first send that took the
      // lock: the script then saw the lock held (by this very owner). Give that phantom back.
      if (this.#host.drops() !== drops) commands.release(this.#keys, hold.owner, 1).catch(() => undefined);
      stop.throwIfAborted();
      return { pttl: reply.pttl };
    }
    hold.count = reply.count;
    hold.token = reply.token;
    hold.held = true;
    watchdog.leaseFrom(hold, sentAt, lease);
    if (stop.aborted || performance.now() >= hold.deadline) {
      // Given back: the wait gave up while this attempt was out (no phantom hold), or the reply came
      // so late that the lease it began may be over already (never hand out a lost lease).
      hold.mutex.runExclusive(() => this.releaseHold(hold)).catch(() => undefined);
      stop.throwIfAborted();
      return { pttl: 0 };
    }
    return { lease: new LeaseImpl(this, hold, hold.count) };
  }
}
