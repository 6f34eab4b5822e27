// The reentrant lock: its attempt, re-entry and release in terms of the runtime and of its commands
// on the topology (one server, a Cluster, or a Redlock quorum: lock/quorum.ts).
import type { Lease } from '../api.ts';
import { LeaseImpl } from '../lease.ts';
import { LockBase, type LockReads } from '../lock-base.ts';
import { acquire, type Attempt } from '../runtime/acquire.ts';
import { Hold, type HoldScripts, type ReenterOutcome, type ReleaseOutcome } from '../runtime/hold.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { wakeHead } from '../runtime/waiting.ts';
import type { Renewable, Renewer } from '../runtime/renewable.ts';
import { LockCommands } from './commands.ts';
import { lockKeys, type LockKeys } from './keys.ts';

/** One attempt as a lock's commands decide it: taken, with its token; or held, and when to try again. */
export type TakeOutcome = { readonly kind: 'acquired'; readonly token: number } | { readonly kind: 'busy'; readonly retryMs: number };

/**
 * The lock's commands on its topology: `LockCommands` on one server or a Cluster, `QuorumLock`
 * (quorum.ts) on a Redlock quorum, which decides each outcome by the majority and gives back what a
 * failed attempt took. Names are given for the errors they raise.
 */
export interface LockTopology extends LockReads<LockKeys> {
  /**
   * The attempts of one wait, in order: each takes the lock for a fresh owner, or says when to try
   * again (a quorum asks its gate master first after the first attempt). Rejects when Redis (or a
   * majority) cannot be reached, having given back whatever the attempt may have taken.
   */
  attempts(keys: LockKeys, name: string, waitMs: number, leaseMs: number): (owner: string) => Promise<TakeOutcome>;
  reenter(keys: LockKeys, owner: string, believed: number, leaseMs: number | undefined, name: string): Promise<ReenterOutcome>;
  release(keys: LockKeys, owner: string, believed: number, whole: boolean, name: string): Promise<ReleaseOutcome>;
  renew(holds: readonly Renewable[], leaseMs: number): Promise<boolean[]>;
}

/** What every lock of one client shares: its runtime, its commands, and the renewer of its holds. */
export interface LockShared {
  readonly runtime: Runtime;
  readonly commands: LockTopology;
  readonly renewer: Renewer;
}

export function createLockShared(runtime: Runtime): LockShared {
  const commands = new LockCommands(runtime.runner, runtime.publish, runtime.leaseMs, runtime.fenceTtlMs);
  // On a Cluster the watchdog cuts batches by slot (a script cannot span slots).
  return { runtime, commands, renewer: { renew: (batch, leaseMs) => commands.renew(batch, leaseMs), batch: 500 } };
}

/** The reentrant lock, on any topology: its commands decide each attempt. */
export class LockImpl extends LockBase<LockKeys> {
  readonly #shared: LockShared;
  readonly #keys: LockKeys;
  readonly #scripts: HoldScripts;

  constructor(shared: LockShared, prefix: string, name: string) {
    const keys = lockKeys(prefix, name);
    super(shared.runtime, 'lock', name, keys, shared.commands);
    this.#shared = shared;
    this.#keys = keys;
    const { commands } = shared;
    this.#scripts = {
      release: (hold, believed, whole) => commands.release(keys, hold.owner, believed, whole, name),
      reenter: (hold, believed, leaseMs) => commands.reenter(keys, hold.owner, believed, leaseMs, name),
    };
  }

  protected takeFresh(waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Lease> {
    const { runtime, commands } = this.#shared;
    const lease = leaseMs ?? runtime.leaseMs;
    const take = commands.attempts(this.#keys, this.name, waitMs, lease);
    return acquire(runtime, {
      name: this.name,
      waitMs,
      signal,
      channel: this.#keys.channel,
      rule: wakeHead,
      need: 1,
      key: this.#keys.lock,
      leaseMs: lease,
      attempt: () => this.#attempt(take, leaseMs),
      giveBack: (lease) => (lease as LeaseImpl).giveBack(),
    });
  }

  /** One attempt for a fresh hold (a new owner each time). */
  async #attempt(take: (owner: string) => Promise<TakeOutcome>, leaseMs: number | undefined): Promise<Attempt<Lease>> {
    const { runtime, renewer } = this.#shared;
    const { watchdog } = runtime;
    const lease = leaseMs ?? runtime.leaseMs;
    const hold = new Hold(runtime, { name: this.name, key: this.#keys.lock, renewer, scripts: this.#scripts, renewable: leaseMs === undefined });
    // Renewal is registered before the acquire is sent, and only while an attempt is out: a waiter
    // between attempts holds nothing to renew.
    if (hold.renewable) watchdog.add(hold);
    const sentAt = watchdog.clock.now();
    let outcome: TakeOutcome;
    try {
      outcome = await take(hold.owner);
    } catch (error) {
      watchdog.delete(hold);
      throw error;
    }
    if (outcome.kind === 'busy') {
      // Never this attempt's own hold: a second run of it (a resend) answers "acquired" (acquire-2.lua).
      watchdog.delete(hold);
      return outcome;
    }
    hold.acquired(outcome.token, sentAt, lease);
    // Replica sync: not handed out before enough replicas have it (a failover could forget it).
    await hold.replicated();
    // Validity: the lease less the time the reply took (on a quorum, less the clock drift too).
    if (watchdog.clock.now() >= hold.deadline) {
      // The reply came so late that the lease it began may be over already: never hand out a lost
      // lease. Given back before the next attempt (on the same connection, answered first).
      await hold.giveBack().catch(() => undefined);
      return { kind: 'late' };
    }
    return { kind: 'acquired', value: new LeaseImpl(hold, 1, 'lock', runtime.clientId, runtime.closed) };
  }
}
