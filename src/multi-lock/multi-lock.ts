// The multi-lock: one Lock over several locks of one client. It takes its members one by one in one
// order (by name, then kind: the same in every process, so no two multi-locks ever wait on each other
// in a cycle), all or none: whatever it took is given back when the whole does not come together.
import type { Lease, Lock } from '../api.ts';
import { LockTimeoutError } from '../errors.ts';
import { frontAcquire, frontRunExclusive, frontTryAcquire, type Taker } from '../front.ts';
import type { AcquireOptions, TryAcquireOptions } from '../options.ts';
import { settledWithin } from '../runtime/acquire.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { checkMembers, joinNames, type Member } from './members.ts';
import { giveBack, lostOf, MultiLeaseImpl, type MultiLease } from './multi-lease.ts';

/**
 * A `Lock` over several locks of one client, from `client.multiLock(locks)`: its leases are
 * `MultiLease`s, which also hand out each member's own lease.
 *
 * @example
 * ```ts
 * const both = client.multiLock([client.lock('account:1'), client.lock('account:2')]);
 * await both.runExclusive(async (lease) => transfer(1, 2, 100, lease.fencingToken), { waitMs: 5_000 });
 * ```
 */
export interface MultiLock extends Lock {
  /**
   * Takes every member, in member order (by name, then kind), within one `waitMs` for the whole; gives back what it took when
   * it fails, times out or is aborted. Inside the lease's context it re-enters every member.
   * @throws {LockTimeoutError} when `waitMs` elapsed first, naming the member that was held.
   * @throws {LockError} a member's error (`ERR_LOCK_UNREACHABLE`...), after what was taken was given back.
   * @throws {TypeError | RangeError} for bad options, before any I/O.
   */
  acquire(options?: AcquireOptions): Promise<MultiLease>;
  /** Tries every member once: the lease, or null when one of them is held elsewhere (nothing is left taken). */
  tryAcquire(options?: TryAcquireOptions): Promise<MultiLease | null>;
  /**
   * Acquires, runs `fn(lease)` in the context of every member's hold, and releases every member,
   * whatever `fn` does.
   * @throws {LockLostError} when a member was lost while `fn` ran (its result is then discarded).
   */
  runExclusive<T>(fn: (lease: MultiLease) => T | Promise<T>, options?: AcquireOptions): Promise<T>;
}

/** How long a failed acquire waits for what it took to be given back before it rejects. */
const ROLLBACK_MS = 1_000;
/**
 * Members taken this long or longer before the last one are read back on Redis before the lease is
 * handed out: a wait most likely came between, and a member may have been lost meanwhile (Redis
 * restarted, failed over, or lost the key) without this process knowing yet. Below it (no wait), the
 * exposure is the few round trips any lock's reply has, and costs no extra round trip.
 */
const VERIFY_AFTER_MS = 5;

export class MultiLockImpl implements MultiLock {
  readonly name: string;
  readonly #runtime: Runtime;
  /** In acquisition order (by name, then kind). */
  readonly #members: readonly Member[];
  readonly #taker: Taker<MultiLease, undefined>;

  /** @throws {TypeError | RangeError} for bad members, before any I/O (see checkMembers). */
  constructor(runtime: Runtime, locks: readonly Lock[]) {
    this.#members = checkMembers(locks, runtime);
    this.#runtime = runtime;
    this.name = joinNames(locks);
    this.#taker = { name: this.name, kind: 'multi-lock', clientId: runtime.clientId, traits: runtime.traits, maxHoldMs: runtime.maxHoldMs, check: () => undefined, take: (t) => this.#take(t.waitMs, t.leaseMs, t.signal) };
  }

  acquire(options?: AcquireOptions): Promise<MultiLease> {
    return frontAcquire(this.#taker, options);
  }

  tryAcquire(options?: TryAcquireOptions): Promise<MultiLease | null> {
    return frontTryAcquire(this.#taker, options);
  }

  runExclusive<T>(fn: (lease: MultiLease) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    return frontRunExclusive(() => this.acquire(options) as Promise<MultiLeaseImpl>, fn);
  }

  /**
   * Takes every member in member order, each within what is left of `waitMs` (a member reached when it
   * is used up is still tried once). A member lost before the last one is taken makes it start over,
   * while time is left; anything else that fails the whole gives back what it took, then rejects.
   */
  async #take(waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<MultiLease> {
    const { clock } = this.#runtime.watchdog;
    const deadline = clock.now() + waitMs;
    for (;;) {
      const taken: Lease[] = [];
      let firstAt = 0;
      try {
        for (const member of this.#members) {
          const left = waitMs === Number.POSITIVE_INFINITY ? waitMs : Math.max(0, Math.ceil(deadline - clock.now()));
          const options: AcquireOptions = { waitMs: left };
          if (leaseMs !== undefined) options.leaseMs = leaseMs;
          if (signal !== undefined) options.signal = signal;
          try {
            taken.push(await member.lock.acquire(options));
            if (taken.length === 1) firstAt = clock.now();
          } catch (error) {
            // The whole timed out, not just this member: say so under the multi-lock's name.
            if (error instanceof LockTimeoutError) {
              throw new LockTimeoutError(`Multi-lock "${this.name}" was not acquired within ${waitMs} ms: member "${member.lock.name}" is held`, {
                lockName: this.name,
                cause: error,
              });
            }
            throw error;
          }
        }
      } catch (error) {
        await this.#rollback(taken);
        throw error;
      }
      // A member lost while a later one was waited for (its fixed lease ran out, it was force-unlocked,
      // Redis lost it): never hand out a lease with a member gone. Its signal is read after the
      // check on Redis, with no await between it and the hand-out: a loss signalled meanwhile counts.
      const waited = clock.now() - firstAt >= VERIFY_AFTER_MS;
      if ((waited && !(await this.#stillHeld(taken))) || taken.some((lease) => lostOf(lease) !== undefined)) {
        await this.#rollback(taken);
        if (clock.now() >= deadline) {
          throw new LockTimeoutError(`Multi-lock "${this.name}" was not acquired within ${waitMs} ms: a member was lost while the others were awaited`, {
            lockName: this.name,
          });
        }
        continue;
      }
      const members: Lease[] = [];
      this.#members.forEach((member, i) => (members[member.index] = taken[i]!));
      return new MultiLeaseImpl(this.name, members, taken, this.#runtime);
    }
  }

  /** Whether Redis still has every member but the last one (just taken) held by its lease's owner: one round trip. */
  async #stillHeld(taken: readonly Lease[]): Promise<boolean> {
    try {
      const counts = await Promise.all(taken.slice(0, -1).map((lease, i) => lease.run(() => this.#members[i]!.lock.holdCount())));
      return counts.every((count) => count > 0);
    } catch (error) {
      await this.#rollback(taken);
      throw error;
    }
  }

  /** Gives back, all at once, what a failed acquire took; waits a bounded time for it. */
  #rollback(taken: readonly Lease[]): Promise<void> {
    if (taken.length === 0) return Promise.resolve();
    const { closed } = this.#runtime;
    return settledWithin(Promise.all(taken.map((lease) => giveBack(lease, closed))), ROLLBACK_MS);
  }

  /** Whether any member is locked (by anyone): an acquire could not take them all now. */
  async isLocked(): Promise<boolean> {
    return (await Promise.all(this.#members.map((member) => member.lock.isLocked()))).some(Boolean);
  }

  async isHeldByCurrentContext(): Promise<boolean> {
    return (await this.holdCount()) > 0;
  }

  /** The fewest holds the current context has on any member: 0 unless it holds them all. */
  async holdCount(): Promise<number> {
    return Math.min(...(await Promise.all(this.#members.map((member) => member.lock.holdCount()))));
  }

  /** The shortest lease left among the locked members; null when none is locked. */
  async remainingTtlMs(): Promise<number | null> {
    const ttls = await Promise.all(this.#members.map((member) => member.lock.remainingTtlMs()));
    const locked = ttls.filter((ttl): ttl is number => ttl !== null);
    return locked.length === 0 ? null : Math.min(...locked);
  }

  /** Force-unlocks every member; true when any was locked. */
  async forceUnlock(): Promise<boolean> {
    return (await Promise.all(this.#members.map((member) => member.lock.forceUnlock()))).some(Boolean);
  }
}
