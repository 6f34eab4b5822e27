// RFairLock of the Redisson stand-in: RLock's hash plus a queue and a deadline zset whose deadlines
// come from this process's clock; each waiter listens on its own channel
// redisson_lock__channel:{<name>}:<uuid>:<threadId>, and a release wakes the head only.
import type { StandInContext } from './context.ts';
import { FAIR_ACQUIRE, FAIR_FORCE_UNLOCK, FAIR_LEAVE, FAIR_TRY, FAIR_UNLOCK } from './fair-scripts.ts';
import { LockStandIn, type UnlockResult } from './lock.ts';
import { prefixName } from './names.ts';
import type { Attempt } from './waiting.ts';

export interface FairLockOptions {
  /** fairLockWaitTimeout in ms: how long a queued waiter may take to come for the lock. @default the instance's (300 000) */
  readonly waitTimeoutMs?: number;
}

export class FairLockStandIn extends LockStandIn {
  readonly #waitTimeoutMs: number;

  constructor(ctx: StandInContext, name: string, options: FairLockOptions = {}) {
    super(ctx, name);
    this.#waitTimeoutMs = options.waitTimeoutMs ?? ctx.fairWaitMs;
  }

  get queueKey(): string {
    return prefixName('redisson_lock_queue', this.name);
  }

  get timeoutKey(): string {
    return prefixName('redisson_lock_timeout', this.name);
  }

  /** A waiter's own channel. */
  channelOfThread(threadId: number): string {
    return `${this.channel}:${this.owner(threadId)}`;
  }

  override async forceUnlock(): Promise<boolean> {
    this.cancelRenewal(undefined, null);
    const keys = [this.name, this.queueKey, this.timeoutKey, this.channel];
    return (await this.ctx.redis.eval(FAIR_FORCE_UNLOCK, keys, [0, Date.now(), this.ctx.redis.publishCommand])) === 1;
  }

  /** tryLock(waitTime) queues with waitTime as its wait; lock() with fairLockWaitTimeout. */
  #waitOf(waitMs: number | undefined): number {
    return waitMs !== undefined && waitMs > 0 ? waitMs : this.#waitTimeoutMs;
  }

  #keys(): string[] {
    return [this.name, this.queueKey, this.timeoutKey];
  }

  protected override async attempt(threadId: number, leaseMs: number, waitMs: number | undefined): Promise<Attempt<true>> {
    const args = [leaseMs, this.owner(threadId), this.#waitOf(waitMs), Date.now()];
    const ttlMs = (await this.ctx.redis.eval(FAIR_ACQUIRE, this.#keys(), args)) as number | null;
    return ttlMs === null ? { taken: true, value: true } : { taken: false, ttlMs };
  }

  protected override async tryOnce(threadId: number, leaseMs: number): Promise<boolean> {
    const args = [leaseMs, this.owner(threadId), Date.now(), this.#waitTimeoutMs];
    return (await this.ctx.redis.eval(FAIR_TRY, this.#keys(), args)) === null;
  }

  protected override channelOf(threadId: number): string {
    return this.channelOfThread(threadId);
  }

  protected override async acquireFailed(threadId: number, waitMs: number | undefined): Promise<void> {
    await this.ctx.redis.eval(FAIR_LEAVE, [this.queueKey, this.timeoutKey], [this.owner(threadId), this.#waitOf(waitMs)]);
  }

  protected override async unlockInner(threadId: number, latch: string, latchMs: number): Promise<UnlockResult> {
    const keys = [...this.#keys(), this.channel, latch];
    const args = [0, this.internalLeaseMs, this.owner(threadId), Date.now(), this.ctx.redis.publishCommand, latchMs];
    return (await this.ctx.redis.eval(FAIR_UNLOCK, keys, args)) as UnlockResult;
  }
}
