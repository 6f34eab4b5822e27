// The reentrant lock: its attempt, re-entry and release in terms of the runtime and of its commands
// on the topology (one server, a Cluster, or a Redlock quorum: lock/quorum.ts).
import type { Lease } from '../api.ts';
import type { LeaseImpl } from '../lease.ts';
import { LockBase, type LockReads } from '../lock-base.ts';
import { acquire, type Attempt } from '../runtime/acquire.ts';
import { attemptHold, type TakeOutcome } from '../runtime/attempt.ts';
import { Hold, type HoldScripts, type ReenterOutcome, type ReleaseOutcome } from '../runtime/hold.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { wakeHead } from '../runtime/waiting.ts';
import type { Renewable, Renewer } from '../runtime/renewable.ts';
import { LockCommands, type Keep, type LockMessages } from './commands.ts';
import { lockKeys, type LockKeys } from './keys.ts';

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
  /** `keepMs`: see HoldScripts.release (one server and a Cluster only: a job's end). */
  release(keys: LockKeys, owner: string, believed: number, whole: boolean, name: string, keep?: Keep): Promise<ReleaseOutcome>;
  renew(holds: readonly Renewable[], leaseMs: number): Promise<boolean[]>;
}

/** What every lock of one client shares: its runtime, its commands, and the renewer of its holds. */
export interface LockShared {
  readonly runtime: Runtime;
  readonly commands: LockTopology;
  readonly renewer: Renewer;
  /** The keys of a name, in the client's layout. */
  readonly keys: (prefix: string, name: string) => LockKeys;
}

/**
 * The lock's shared state on one server or a Cluster.
 * @param keys the key layout: relock's by default (src/kinds/ hands Redisson's RLock and RFencedLock keys)
 * @param messages what a release publishes: relock's by default
 */
export function createLockShared(runtime: Runtime, keys: (prefix: string, name: string) => LockKeys = lockKeys, messages?: LockMessages): LockShared {
  const commands = new LockCommands(runtime.runner, runtime.publish, runtime.leaseMs, runtime.fenceTtlMs, messages);
  return {
    runtime,
    commands,
    // On a Cluster the watchdog cuts batches by slot (a script cannot span slots).
    renewer: { renew: (batch, leaseMs) => commands.renew(batch, leaseMs), batch: 500 },
    keys,
  };
}

/** The reentrant lock, on any topology: its commands decide each attempt. */
export class LockImpl extends LockBase<LockKeys> {
  readonly #shared: LockShared;
  readonly #keys: LockKeys;
  readonly #scripts: HoldScripts;

  constructor(shared: LockShared, prefix: string, name: string) {
    const keys = shared.keys(prefix, name);
    super(shared.runtime, 'lock', name, keys, shared.commands);
    this.#shared = shared;
    this.#keys = keys;
    const { commands } = shared;
    this.#scripts = {
      release: (hold, believed, whole, keepMs) => commands.release(keys, hold.owner, believed, whole, name, keepMs === undefined ? undefined : { keepMs, token: hold.token }),
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
  #attempt(take: (owner: string) => Promise<TakeOutcome>, leaseMs: number | undefined): Promise<Attempt<Lease>> {
    const { runtime, renewer } = this.#shared;
    const hold = new Hold(runtime, { name: this.name, key: this.#keys.lock, renewer, scripts: this.#scripts, renewable: leaseMs === undefined });
    return attemptHold(runtime, hold, leaseMs ?? runtime.leaseMs, 'lock', {
      call: () => take(hold.owner),
      giveBack: () => this.#shared.commands.release(this.#keys, hold.owner, 1, true, this.name),
    });
  }
}
