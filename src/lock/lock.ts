// The reentrant lock: its attempt, re-entry and release in terms of the runtime.
import type { Lease } from '../api.ts';
import { LockError } from '../errors.ts';
import { LeaseImpl } from '../lease.ts';
import { LockBase } from '../lock-base.ts';
import { acquire, type Attempt } from '../runtime/acquire.ts';
import { Hold, type HoldScripts } from '../runtime/hold.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { wakeHead } from '../runtime/waiting.ts';
import type { Renewer } from '../runtime/renewable.ts';
import { LockCommands } from './commands.ts';
import { lockKeys, type LockKeys } from './keys.ts';

/** What every lock of one client shares: its runtime, its commands, and the renewer of its holds. */
export interface LockShared {
  readonly runtime: Runtime;
  readonly commands: LockCommands;
  readonly renewer: Renewer;
}

export function createLockShared(runtime: Runtime): LockShared {
  const commands = new LockCommands(runtime.runner, runtime.publish);
  // On a Cluster the watchdog cuts batches by slot (a script cannot span slots).
  return { runtime, commands, renewer: { renew: (batch, leaseMs) => commands.renew(batch, leaseMs), batch: 500 } };
}

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
      release: (hold, believed, whole) => commands.release(keys, hold.owner, believed, whole),
      reenter: (hold, believed, leaseMs) => commands.reenter(keys, hold.owner, believed, leaseMs),
    };
  }

  protected takeFresh(waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Lease> {
    const { runtime } = this.#shared;
    return acquire(runtime, {
      name: this.name,
      waitMs,
      signal,
      channel: this.#keys.channel,
      rule: wakeHead,
      need: 1,
      key: this.#keys.lock,
      leaseMs: leaseMs ?? runtime.leaseMs,
      attempt: () => this.#attempt(leaseMs),
      giveBack: (lease) => (lease as LeaseImpl).giveBack(),
    });
  }

  /** One acquire script call for a fresh hold (a new context id each time). */
  async #attempt(leaseMs: number | undefined): Promise<Attempt<Lease>> {
    const { runtime, commands, renewer } = this.#shared;
    const { watchdog } = runtime;
    const lease = leaseMs ?? runtime.leaseMs;
    const hold = new Hold(runtime, { name: this.name, key: this.#keys.lock, renewer, scripts: this.#scripts, renewable: leaseMs === undefined });
    // Renewal is registered before the acquire is sent, and only while an attempt is out: a waiter
    // between attempts holds nothing to renew.
    if (hold.renewable) watchdog.add(hold);
    const sentAt = watchdog.clock.now();
    let outcome;
    try {
      outcome = await commands.acquire(this.#keys, hold.owner, lease, runtime.fenceTtlMs);
    } catch (error) {
      watchdog.delete(hold);
      // No answer is not "not taken": the script may still run after a client-side timeout. The
      // owner id is this attempt's alone, so giving it back is safe whatever happened.
      if (error instanceof LockError && error.code === 'ERR_LOCK_UNREACHABLE') commands.release(this.#keys, hold.owner, 1, true).catch(() => undefined);
      throw error;
    }
    if (outcome.kind === 'busy') {
      // Never this attempt's own hold: a second run of it (a resend) answers "acquired" (acquire-2.lua).
      watchdog.delete(hold);
      // Sleep until the holder's lease ends, a millisecond more (a Node timer may fire up to one early
      // against Redis's expiry); a key without expiry is retried after a whole lease.
      return { kind: 'busy', retryMs: outcome.pttlMs >= 0 ? outcome.pttlMs + 1 : runtime.leaseMs };
    }
    hold.acquired(outcome.token, sentAt, lease);
    // Replica sync: not handed out before enough replicas have it (a failover could forget it).
    await hold.replicated();
    if (watchdog.clock.now() >= hold.deadline) {
      // The reply came so late that the lease it began may be over already: never hand out a lost lease.
      hold.giveBack().catch(() => undefined);
      return { kind: 'late' };
    }
    return { kind: 'acquired', value: new LeaseImpl(hold, 1, 'lock', runtime.clientId, runtime.closed) };
  }
}
