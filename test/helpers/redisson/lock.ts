// RLock and RFencedLock of the Redisson stand-in: a hash <name> with field <uuid>:<threadId> = hold
// count, a watchdog for holds without an explicit lease, waiters woken by 0 on
// redisson_lock__channel:{<name>}. The fair, read and write locks override its hooks.
import { IllegalMonitorStateError, type StandInContext } from './context.ts';
import { FENCED_ACQUIRE, LOCK_ACQUIRE, LOCK_FORCE_UNLOCK, LOCK_UNLOCK } from './lock-scripts.ts';
import { prefixName, unlockLatchName, unlockLatchTtlMs } from './names.ts';
import { acquireWaiting, type Attempt } from './waiting.ts';

export interface LockOptions {
  /** An explicit lease in ms (no watchdog); without it the watchdog renews the instance's lease. */
  readonly leaseMs?: number;
}

export interface TryLockOptions extends LockOptions {
  /** How long to wait in ms; without it, one attempt (Redisson's tryLock()). */
  readonly waitMs?: number;
}

/** An unlock script's answer: 1 released, 0 still held, null not held by the thread. */
export type UnlockResult = 0 | 1 | null;

export class LockStandIn {
  readonly name: string;
  protected readonly ctx: StandInContext;
  /** internalLockLeaseTime: what a partial unlock sets; the last explicit lease, else the watchdog's. */
  protected internalLeaseMs: number;

  constructor(ctx: StandInContext, name: string) {
    this.ctx = ctx;
    this.name = name;
    this.internalLeaseMs = ctx.leaseMs;
  }

  /** The channel releases are published on. */
  get channel(): string {
    return prefixName('redisson_lock__channel', this.name);
  }

  /** The hash field of a thread of this instance. */
  owner(threadId: number): string {
    return `${this.ctx.id}:${threadId}`;
  }

  /** lock(): waits without limit, re-enters when the thread holds it. */
  async lock(threadId: number, options: LockOptions = {}): Promise<void> {
    await this.acquire(threadId, undefined, options.leaseMs, (leaseMs) => this.attempt(threadId, leaseMs, undefined));
  }

  /** tryLock(): one attempt; with waitMs, tryLock(waitTime, leaseTime). True when taken. */
  async tryLock(threadId: number, options: TryLockOptions = {}): Promise<boolean> {
    const { waitMs, leaseMs } = options;
    if (waitMs === undefined) {
      const taken = await this.tryOnce(threadId, leaseMs ?? this.ctx.leaseMs);
      if (taken) this.onTaken(threadId, leaseMs);
      return taken;
    }
    return (await this.acquire(threadId, waitMs, leaseMs, (lease) => this.attempt(threadId, lease, waitMs))) !== null;
  }

  /** Releases one hold; throws IllegalMonitorStateError when the thread holds none. */
  async unlock(threadId: number): Promise<void> {
    const latch = unlockLatchName(this.name);
    let result: UnlockResult = null;
    try {
      result = await this.unlockInner(threadId, latch, unlockLatchTtlMs());
      // Redisson deletes the latch after the reply; a retry of the same request would have found it.
      await this.ctx.redis.del(latch);
    } finally {
      this.cancelRenewal(threadId, result);
    }
    if (result === null) throw new IllegalMonitorStateError(`attempt to unlock lock, not locked by current thread by node id: ${this.ctx.id} thread-id: ${threadId}`);
  }

  /** Deletes the lock whoever holds it and publishes 0; true when there was one. */
  async forceUnlock(): Promise<boolean> {
    this.cancelRenewal(undefined, null);
    return (await this.ctx.redis.eval(LOCK_FORCE_UNLOCK, [this.name, this.channel], [0, this.ctx.redis.publishCommand])) === 1;
  }

  async isLocked(): Promise<boolean> {
    return (await this.ctx.redis.eval(`return redis.call('exists', KEYS[1])`, [this.name], [])) === 1;
  }

  async getHoldCount(threadId: number): Promise<number> {
    return Number((await this.ctx.redis.eval(`return redis.call('hget', KEYS[1], ARGV[1])`, [this.name], [this.owner(threadId)])) ?? 0);
  }

  // Hooks of the fair, read and write locks.

  /** One acquisition script (EVAL_LONG): taken, or the ttl to wait at most. */
  protected async attempt(threadId: number, leaseMs: number, _waitMs: number | undefined): Promise<Attempt<true>> {
    const ttlMs = (await this.ctx.redis.eval(LOCK_ACQUIRE, [this.name], [leaseMs, this.owner(threadId)])) as number | null;
    return ttlMs === null ? { taken: true, value: true } : { taken: false, ttlMs };
  }

  /** tryLock()'s single attempt (EVAL_NULL_BOOLEAN). */
  protected async tryOnce(threadId: number, leaseMs: number): Promise<boolean> {
    return (await this.attempt(threadId, leaseMs, undefined)).taken;
  }

  /** Where a waiting thread listens. */
  protected channelOf(_threadId: number): string {
    return this.channel;
  }

  /** What a tryLock out of time does (the fair lock leaves its queue). */
  protected async acquireFailed(_threadId: number, _waitMs: number | undefined): Promise<void> {}

  protected async unlockInner(threadId: number, latch: string, latchMs: number): Promise<UnlockResult> {
    const keys = [this.name, this.channel, latch];
    return (await this.ctx.redis.eval(LOCK_UNLOCK, keys, [0, this.internalLeaseMs, this.owner(threadId), this.ctx.redis.publishCommand, latchMs])) as UnlockResult;
  }

  protected scheduleRenewal(threadId: number): void {
    this.ctx.watchdog.locks.add(this.name, threadId, this.owner(threadId));
  }

  /** After every unlock (one registration fewer) and force unlock (all of them). */
  protected cancelRenewal(threadId: number | undefined, result: UnlockResult): void {
    this.ctx.watchdog.locks.cancel(this.name, threadId);
    if (result !== 0) this.internalLeaseMs = this.ctx.leaseMs;
  }

  /** Waits as Redisson does; each successful attempt sets the lease or starts the watchdog. */
  protected acquire<T>(threadId: number, waitMs: number | undefined, leaseMs: number | undefined, inner: (leaseMs: number) => Promise<Attempt<T>>): Promise<T | null> {
    const attempt = async () => {
      const result = await inner(leaseMs ?? this.ctx.leaseMs);
      if (result.taken) this.onTaken(threadId, leaseMs);
      return result;
    };
    return acquireWaiting(this.ctx, { attempt, channel: this.channelOf(threadId), kind: 'lock', waitMs, giveUp: () => this.acquireFailed(threadId, waitMs) });
  }

  protected onTaken(threadId: number, leaseMs: number | undefined): void {
    if (leaseMs !== undefined && leaseMs > 0) this.internalLeaseMs = leaseMs;
    else this.scheduleRenewal(threadId);
  }
}

/** RFencedLock: every acquisition, re-entries too, increments redisson_lock_token:{<name>}. */
export class FencedLockStandIn extends LockStandIn {
  get tokenKey(): string {
    return prefixName('redisson_lock_token', this.name);
  }

  /** lockAndGetToken(): waits without limit; the token after this acquisition's increment. */
  async lockAndGetToken(threadId: number, options: LockOptions = {}): Promise<number> {
    return (await this.acquire(threadId, undefined, options.leaseMs, (leaseMs) => this.#attemptToken(threadId, leaseMs)))!;
  }

  /** tryLockAndGetToken(waitTime, leaseTime): the token, or null when waitMs (0: one attempt) ran out. */
  async tryLockAndGetToken(threadId: number, options: LockOptions & { readonly waitMs: number }): Promise<number | null> {
    return this.acquire(threadId, options.waitMs, options.leaseMs, (leaseMs) => this.#attemptToken(threadId, leaseMs));
  }

  /** The last token drawn (getToken), null before any. */
  async getToken(): Promise<number | null> {
    const token = await this.ctx.redis.eval(`return redis.call('get', KEYS[1])`, [this.tokenKey], []);
    return token === null ? null : Number(token);
  }

  protected override async attempt(threadId: number, leaseMs: number): Promise<Attempt<true>> {
    const result = await this.#attemptToken(threadId, leaseMs);
    return result.taken ? { taken: true, value: true } : result;
  }

  async #attemptToken(threadId: number, leaseMs: number): Promise<Attempt<number>> {
    const [ttlMs, token] = (await this.ctx.redis.eval(FENCED_ACQUIRE, [this.name, this.tokenKey], [leaseMs, this.owner(threadId)])) as [number, number];
    return ttlMs === -1 ? { taken: true, value: token } : { taken: false, ttlMs };
  }
}
