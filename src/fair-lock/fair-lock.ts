// The fair lock: the same Lock as lock(), served in the order waiters started waiting across every
// process, with the lock handed directly to the head of the queue on release.
import type { Lease, Lock } from '../api.ts';
import { traceAcquire } from '../diagnostics.ts';
import { LockLostError, LockTimeoutError } from '../errors.ts';
import { LeaseImpl, runExclusive } from '../lease.ts';
import type { AcquireOptions, TryAcquireOptions } from '../options.ts';
import type { HoldScripts } from '../runtime/hold.ts';
import { checkFunction, checkMs, checkOptions, checkSignal, checkWaitMs, MIN_FIXED_LEASE_MS } from '../validate.ts';
import { frame } from './frame.ts';
import { fairLockKeys, type FairLockKeys } from './keys.ts';
import type { FairShared } from './shared.ts';
import { fairWait } from './wait.ts';

export class FairLockImpl implements Lock {
  readonly name: string;
  readonly #shared: FairShared;
  readonly #keys: FairLockKeys;
  readonly #scripts: HoldScripts;

  constructor(shared: FairShared, prefix: string, name: string) {
    this.name = name;
    this.#shared = shared;
    this.#keys = fairLockKeys(prefix, name);
    const { commands, waiters } = shared;
    const keys = this.#keys;
    this.#scripts = {
      release: async (hold, believed, whole) => {
        const outcome = await commands.release(keys, hold.owner, believed, whole);
        // A grantee of this very client starts on this reply, before its message arrives.
        if (outcome.kind === 'released' && outcome.grant) waiters.offer(outcome.grant);
        return outcome;
      },
      reenter: (hold, believed, leaseMs) => commands.reenter(keys, hold.owner, believed, leaseMs),
    };
  }

  acquire(options?: AcquireOptions): Promise<Lease> {
    try {
      const o = checkOptions('acquire()', options, ['waitMs', 'leaseMs', 'signal']);
      const waitMs = checkWaitMs(o.waitMs);
      const leaseMs = checkMs('leaseMs', o.leaseMs, MIN_FIXED_LEASE_MS);
      const signal = checkSignal(o.signal);
      return traceAcquire(this.name, 'fair-lock', this.#shared.runtime.clientId, () => this.#acquire(waitMs, leaseMs, signal));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async tryAcquire(options?: TryAcquireOptions): Promise<Lease | null> {
    const o = checkOptions('tryAcquire()', options, ['leaseMs']);
    const leaseMs = checkMs('leaseMs', o.leaseMs, MIN_FIXED_LEASE_MS);
    try {
      return await traceAcquire(this.name, 'fair-lock', this.#shared.runtime.clientId, () => this.#acquire(0, leaseMs, undefined));
    } catch (error) {
      if (error instanceof LockTimeoutError) return null;
      throw error;
    }
  }

  async runExclusive<T>(fn: (lease: Lease) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    checkFunction('fn', fn);
    return runExclusive((await this.acquire(options)) as LeaseImpl, fn);
  }

  isLocked(): Promise<boolean> {
    return this.#shared.commands.isLocked(this.#keys);
  }

  async isHeldByCurrentContext(): Promise<boolean> {
    return (await this.holdCount()) > 0;
  }

  async holdCount(): Promise<number> {
    const hold = this.#shared.runtime.context.find(this.#keys.lock);
    return hold ? this.#shared.commands.holdCount(this.#keys, hold.owner) : 0;
  }

  remainingTtlMs(): Promise<number | null> {
    return this.#shared.commands.remainingTtlMs(this.#keys);
  }

  async forceUnlock(): Promise<boolean> {
    const deleted = await this.#shared.commands.forceRelease(this.#keys);
    this.#shared.runtime.watchdog.loseKey(this.#keys.lock, new LockLostError(`Lock "${this.name}" was force-unlocked`, { lockName: this.name }));
    return deleted;
  }

  async #acquire(waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Lease> {
    const { runtime } = this.#shared;
    if (runtime.closed.aborted) throw runtime.closed.reason;
    signal?.throwIfAborted();
    const held = runtime.context.find(this.#keys.lock);
    if (held) {
      // Re-entry never queues: the context holds the lock already.
      const count = await held.reenter(leaseMs);
      if (count !== undefined) return new LeaseImpl(held, count, 'fair-lock', runtime.clientId, runtime.closed);
    }
    const wait = { shared: this.#shared, keys: this.#keys, name: this.name, scripts: this.#scripts, waitMs, leaseMs };
    const taken = await frame(runtime, {
      name: this.name,
      waitMs,
      signal,
      wait: (stop, state) => fairWait(wait, stop, state),
      // Through the hold, not the lease: a lease refuses to release once the client is closed, but
      // a Redis connection passed in is still open, and the lock must not stay taken by nobody.
      giveBack: ({ hold }) => void hold.giveBack().catch(() => undefined),
    });
    return taken.lease;
  }
}
