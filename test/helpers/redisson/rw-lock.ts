// RReadWriteLock of the Redisson stand-in: both sides share hash <name> and channel
// redisson_rwlock:{<name>}; a read release publishes 0 (wakes one local waiter), a write release 1
// (wakes all). Read holds are renewed through their rwlock_timeout keys.
import type { StandInContext } from './context.ts';
import { LockStandIn, type UnlockResult } from './lock.ts';
import { prefixName, suffixName, tagged } from './names.ts';
import { READ_ACQUIRE, READ_IS_LOCKED, READ_UNLOCK, RW_FORCE_UNLOCK, WRITE_ACQUIRE, WRITE_UNLOCK } from './rw-scripts.ts';
import type { Attempt } from './waiting.ts';

const READ_UNLOCK_MESSAGE = 1;
const UNLOCK_MESSAGE = 0;

export class ReadLockStandIn extends LockStandIn {
  override get channel(): string {
    return prefixName('redisson_rwlock', this.name);
  }

  /** {<name>}:<uuid>:<tid>:rwlock_timeout: the thread's hold n has the string <this>:<n>. */
  timeoutPrefix(threadId: number): string {
    return `${suffixName(this.name, this.owner(threadId))}:rwlock_timeout`;
  }

  override async forceUnlock(): Promise<boolean> {
    this.cancelRenewal(undefined, null);
    return (await this.ctx.redis.eval(RW_FORCE_UNLOCK, [this.name, this.channel], [UNLOCK_MESSAGE, this.ctx.redis.publishCommand, 'read'])) === 1;
  }

  override async isLocked(): Promise<boolean> {
    return (await this.ctx.redis.eval(READ_IS_LOCKED, [this.name], [])) === 1;
  }

  protected override async attempt(threadId: number, leaseMs: number): Promise<Attempt<true>> {
    const args = [leaseMs, this.owner(threadId), `${this.owner(threadId)}:write`];
    const ttlMs = (await this.ctx.redis.eval(READ_ACQUIRE, [this.name, this.timeoutPrefix(threadId)], args)) as number | null;
    return ttlMs === null ? { taken: true, value: true } : { taken: false, ttlMs };
  }

  protected override async unlockInner(threadId: number, latch: string, latchMs: number): Promise<UnlockResult> {
    const keys = [this.name, this.channel, this.timeoutPrefix(threadId), tagged(this.name), latch];
    const args = [UNLOCK_MESSAGE, this.owner(threadId), this.ctx.redis.publishCommand, latchMs];
    return (await this.ctx.redis.eval(READ_UNLOCK, keys, args)) as UnlockResult;
  }

  protected override scheduleRenewal(threadId: number): void {
    this.ctx.watchdog.readLocks.add(this.name, threadId, this.owner(threadId), tagged(this.name));
  }

  /** Like Redisson, cancels on both tasks: a read unlock also drops a write hold's registration of the same thread. */
  protected override cancelRenewal(threadId: number | undefined, result: UnlockResult): void {
    super.cancelRenewal(threadId, result);
    this.ctx.watchdog.readLocks.cancel(this.name, threadId);
  }
}

export class WriteLockStandIn extends LockStandIn {
  override get channel(): string {
    return prefixName('redisson_rwlock', this.name);
  }

  override owner(threadId: number): string {
    return `${super.owner(threadId)}:write`;
  }

  override async forceUnlock(): Promise<boolean> {
    this.cancelRenewal(undefined, null);
    const args = [READ_UNLOCK_MESSAGE, this.ctx.redis.publishCommand, 'write'];
    return (await this.ctx.redis.eval(RW_FORCE_UNLOCK, [this.name, this.channel], args)) === 1;
  }

  override async isLocked(): Promise<boolean> {
    return (await this.ctx.redis.eval(`return redis.call('hget', KEYS[1], 'mode')`, [this.name], [])) === 'write';
  }

  protected override async attempt(threadId: number, leaseMs: number): Promise<Attempt<true>> {
    const ttlMs = (await this.ctx.redis.eval(WRITE_ACQUIRE, [this.name], [leaseMs, this.owner(threadId)])) as number | null;
    return ttlMs === null ? { taken: true, value: true } : { taken: false, ttlMs };
  }

  protected override async unlockInner(threadId: number, latch: string, latchMs: number): Promise<UnlockResult> {
    const args = [READ_UNLOCK_MESSAGE, this.internalLeaseMs, this.owner(threadId), this.ctx.redis.publishCommand, latchMs];
    return (await this.ctx.redis.eval(WRITE_UNLOCK, [this.name, this.channel, latch], args)) as UnlockResult;
  }
}

/** RReadWriteLock: each call makes a new side object, as Redisson's readLock()/writeLock() do. */
export class ReadWriteLockStandIn {
  readonly name: string;
  readonly #ctx: StandInContext;

  constructor(ctx: StandInContext, name: string) {
    this.#ctx = ctx;
    this.name = name;
  }

  readLock(): ReadLockStandIn {
    return new ReadLockStandIn(this.#ctx, this.name);
  }

  writeLock(): WriteLockStandIn {
    return new WriteLockStandIn(this.#ctx, this.name);
  }
}
