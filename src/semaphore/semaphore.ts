// The semaphore: at most `permits` held at once across every client of a name, each lease its own
// expirable set of permits, kept alive by the watchdog or ended by a fixed lease. Not reentrant.
import type { Lease, Semaphore } from '../api.ts';
import { LockError } from '../errors.ts';
import { frontAcquire, frontRunExclusive, frontTryAcquire, type Taker } from '../front.ts';
import { LeaseImpl } from '../lease.ts';
import type { AcquireOptions, SemaphoreOptions } from '../options.ts';
import { acquire, type Attempt } from '../runtime/acquire.ts';
import { attemptHold } from '../runtime/attempt.ts';
import { Hold, type HoldScripts } from '../runtime/hold.ts';
import type { Runtime } from '../runtime/runtime.ts';
import type { WakeRule } from '../runtime/waiting.ts';
import type { Renewer } from '../runtime/renewable.ts';
import { checkMs, checkOptions, checkPermits, MIN_FIXED_LEASE_MS } from '../validate.ts';
import { SemaphoreCommands, type SemaphoreTopology } from './commands.ts';
import { semaphoreKeys, type SemaphoreKeys } from './keys.ts';

/** What every semaphore of one client shares: its runtime, its commands, and the renewer of its leases. */
export interface SemaphoreShared {
  readonly runtime: Runtime;
  readonly commands: SemaphoreTopology;
  readonly renewer: Renewer;
  /** The keys of a name, in the client's layout. */
  readonly keys: (prefix: string, name: string) => SemaphoreKeys;
}

/**
 * The semaphore's shared state on one server or a Cluster.
 * @param commands relock's by default (src/kinds/ hands Redisson's RPermitExpirableSemaphore commands)
 * @param keys the key layout: relock's by default
 */
export function createSemaphoreShared(
  runtime: Runtime,
  commands: SemaphoreTopology = new SemaphoreCommands(runtime.runner, runtime.publish),
  keys: (prefix: string, name: string) => SemaphoreKeys = semaphoreKeys,
): SemaphoreShared {
  return {
    runtime,
    commands,
    // A Cluster cannot run one script over keys of several slots: renew one lease per call there.
    renewer: { renew: (batch, leaseMs) => commands.renew(batch, leaseMs), batch: 250 },
    keys,
  };
}

/**
 * A release message carries how many permits came free: it wakes the heads of the local queue while
 * their needs fit in that number (the head whatever its need), in order, never the whole herd.
 */
export const wakePermits: WakeRule = (queue, message) => {
  let left = Number(message);
  if (!Number.isSafeInteger(left) || left < 1) left = 1;
  for (let i = 0; i < queue.length && left > 0; i++) {
    const waiter = queue[i]!;
    if (i > 0 && waiter.need > left) break;
    waiter.wake();
    left -= waiter.need;
  }
};

export class SemaphoreImpl implements Semaphore {
  readonly name: string;
  readonly permits: number;
  readonly #shared: SemaphoreShared;
  readonly #keys: SemaphoreKeys;
  readonly #scripts: HoldScripts;
  /** The front's view: `permits` is this kind's own option. */
  readonly #taker: Taker<Lease, number>;

  /** @throws {TypeError | RangeError} for bad options, naming `permits`. */
  constructor(shared: SemaphoreShared, prefix: string, name: string, options: SemaphoreOptions) {
    const o = checkOptions('semaphore()', options ?? {}, ['permits', 'maxHoldMs']);
    this.permits = checkPermits(o.permits);
    const maxHoldMs = checkMs('maxHoldMs', o.maxHoldMs, MIN_FIXED_LEASE_MS) ?? shared.runtime.maxHoldMs;
    this.name = name;
    this.#shared = shared;
    const keys = (this.#keys = shared.keys(prefix, name));
    this.#scripts = { release: (hold) => shared.commands.release(keys, hold.owner) };
    this.#taker = {
      name,
      kind: 'semaphore',
      clientId: shared.runtime.clientId,
      traits: shared.runtime.traits,
      maxHoldMs,
      extra: ['permits'],
      check: (o) => this.#wanted(o.permits),
      take: (t, permits) => this.#take(t.waitMs, t.leaseMs, t.signal, permits),
    };
  }

  acquire(options?: AcquireOptions & { permits?: number }): Promise<Lease> {
    return frontAcquire(this.#taker, options);
  }

  tryAcquire(options?: { leaseMs?: number; permits?: number }): Promise<Lease | null> {
    return frontTryAcquire(this.#taker, options);
  }

  runExclusive<T>(fn: (lease: Lease) => T | Promise<T>, options?: AcquireOptions & { permits?: number }): Promise<T> {
    return frontRunExclusive(() => this.acquire(options) as Promise<LeaseImpl>, fn);
  }

  async availablePermits(): Promise<number> {
    const outcome = await this.#shared.commands.available(this.#keys, this.permits);
    if (outcome.kind === 'mismatch') throw this.#mismatch(outcome.limit);
    return outcome.permits;
  }

  /** The permits one acquire asks for: 1 by default, at most the limit. */
  #wanted(value: unknown): number {
    return value === undefined ? 1 : checkPermits(value, this.permits);
  }

  #mismatch(stored: number): LockError {
    return new LockError(
      `Semaphore "${this.name}" is held under a limit of ${stored} permits, not ${this.permits}: every user of one name must pass the same \`permits\``,
      { lockName: this.name, code: 'ERR_LOCK_PERMITS_MISMATCH' },
    );
  }

  /** Every acquire is a fresh lease: no re-entry, even inside a lease's own context. */
  #take(waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined, permits: number): Promise<Lease> {
    const { runtime } = this.#shared;
    return acquire(runtime, {
      name: this.name,
      waitMs,
      signal,
      channel: this.#keys.channel,
      rule: wakePermits,
      need: permits,
      handsOnWakeUps: true,
      // The self-wait warning is about re-entry, which a semaphore never does, and one client may well
      // hold permits while more of its acquires wait: a key no hold has keeps the warning off.
      key: this.#keys.channel,
      leaseMs: leaseMs ?? runtime.leaseMs,
      attempt: () => this.#attempt(permits, leaseMs),
      giveBack: (lease) => (lease as LeaseImpl).giveBack(),
    });
  }

  /** One acquire script call for a new lease (a new owner id each time). */
  #attempt(permits: number, leaseMs: number | undefined): Promise<Attempt<Lease>> {
    const { runtime, commands, renewer } = this.#shared;
    const keys = this.#keys;
    const lease = leaseMs ?? runtime.leaseMs;
    const hold = new Hold(runtime, { name: this.name, key: keys.sem, renewer, scripts: this.#scripts, renewable: leaseMs === undefined });
    return attemptHold(runtime, hold, lease, 'semaphore', {
      call: async () => {
        const outcome = await commands.acquire(keys, hold.owner, permits, this.permits, lease, runtime.fenceTtlMs);
        if (outcome.kind === 'mismatch') throw this.#mismatch(outcome.limit);
        // Busy: sleep as the commands say; with no lease end known, a whole lease.
        if (outcome.kind !== 'acquired') return { kind: 'busy', retryMs: outcome.retryMs >= 0 ? outcome.retryMs : runtime.leaseMs };
        return outcome;
      },
      giveBack: () => commands.release(keys, hold.owner),
    });
  }

}
