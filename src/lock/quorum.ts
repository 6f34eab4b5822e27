// The lock's commands on a Redlock quorum (client.lock() on a client of several masters): the lock's
// scripts run on every master; an attempt holds when a majority took it within the validity time, and
// its fencing token is confirmed on a majority before the lease is handed out (the rule is proved in
// docs/guarantees.md). The lock itself is lock.ts's, the same as on one server.
import type { ReenterOutcome, ReleaseOutcome } from '../runtime/hold.ts';
import type { Renewable, Renewer } from '../runtime/renewable.ts';
import { decideAcquire, type Vote } from '../topology/quorum-decide.ts';
import { answeredError, driftMs, noQuorum } from '../topology/quorum-replies.ts';
import type { RedlockShared } from '../topology/quorum-setup.ts';
import { lockKeys, type LockKeys } from './keys.ts';
import type { TakeOutcome } from '../runtime/attempt.ts';
import { isFiniteWait } from '../runtime/wait-errors.ts';
import type { LockShared, LockTopology } from './lock.ts';
import { RedlockCommands, type AcquireResult, type MasterAcquire } from './quorum-commands.ts';

/** A finite wait's attempt settles this long before the wait ends, so that its cause reaches the caller. */
const ANSWER_MARGIN_MS = 100;
/** ... but an attempt is given at least this long (within its validity): a short wait ends as a timeout. */
const MIN_ATTEMPT_MS = 1_000;

/** How long after this client last found a lock held its first attempts on it go through the gate. */
const CONTENDED_MS = 1_000;

/** After the gate was found held, how soon an attempt asks every master again (unless woken before). */
const PROBE_RECHECK_MS = 100;

/** One attempt's outcome, and whether it stopped at a gate found held. */
type GateOutcome = readonly [TakeOutcome, gateHeld: boolean];

/**
 * A Redlock client's shared state with the lock's commands over its masters and their renewer: what
 * the lock, and the fair lock's quorum hold (a lock hold), run on.
 */
export interface RedlockLockShared extends RedlockShared {
  readonly commands: RedlockCommands;
  readonly renewer: Renewer;
}

/** The lock's commands and renewer over a Redlock client's masters. */
export function withLockCommands(redlock: RedlockShared): RedlockLockShared {
  const commands = new RedlockCommands(redlock.masters, redlock.runtime.publish);
  return { ...redlock, commands, renewer: { renew: (batch, leaseMs) => commands.renew(batch, leaseMs), batch: 500, allowanceMs: driftMs } };
}

export class QuorumLock implements LockTopology {
  readonly #shared: RedlockLockShared;

  constructor(shared: RedlockLockShared) {
    this.#shared = shared;
  }

  attempts(keys: LockKeys, name: string, waitMs: number, leaseMs: number): (owner: string) => Promise<TakeOutcome> {
    const { runtime, commands } = this.#shared;
    const { clock } = runtime.watchdog;
    // A finite wait rides out a lost quorum (a master restarting, a connection coming back) until it
    // ends, then rejects with ERR_LOCK_NO_QUORUM (the frame's doing); the others reject at once.
    const finite = isFiniteWait(waitMs);
    const endsAt = clock.now() + waitMs;
    // The first attempt asks every master at once. A later one (a waiter, woken or timed out) asks the
    // gate master first: under contention the losers stop there, one script call each, and the masters
    // are seldom split between owners. After the gate was found held, an attempt PROBE_RECHECK_MS or
    // more later asks every master again (the gate may hold a stale key that no release will clear).
    let attempts = 0;
    /** When the last attempt found the gate held, if it did. */
    let gateHeldAt: number | undefined;
    return async (owner) => {
      const now = clock.now();
      const recheck = gateHeldAt !== undefined && now - gateHeldAt >= PROBE_RECHECK_MS;
      // A first attempt on a lock found held lately queues at the gate too, behind the woken waiters,
      // instead of overtaking them with an attempt on every master.
      const quiet = attempts++ === 0 && now - (this.#shared.contended.get(keys.lock) ?? Number.NEGATIVE_INFINITY) > CONTENDED_MS;
      const gate = quiet || recheck ? undefined : commands.gate();
      // No attempt outlives its validity, nor (for a finite wait) the wait: what has not answered
      // by then counts as unreachable, so the wait ends with the cause, ERR_LOCK_NO_QUORUM.
      const left = finite ? endsAt - now - ANSWER_MARGIN_MS : Number.POSITIVE_INFINITY;
      const timeoutMs = Math.min(leaseMs - driftMs(leaseMs), Math.max(left, MIN_ATTEMPT_MS));
      const [outcome, gateHeld] = await this.#attempt(keys, name, owner, leaseMs, gate, timeoutMs);
      gateHeldAt = gateHeld ? now : undefined;
      if (outcome.kind === 'busy') this.#contended(keys, now);
      return outcome;
    };
  }

  /** Remembers that this lock was found held now (a bounded map: cleared when it grows large). */
  #contended(keys: LockKeys, now: number): void {
    const { contended } = this.#shared;
    if (contended.size >= 1_000 && !contended.has(keys.lock)) contended.clear();
    contended.set(keys.lock, now);
  }

  /** One attempt on every master (the gate first, when given), and its undo when it fails. */
  async #attempt(keys: LockKeys, name: string, owner: string, leaseMs: number, gate: number | undefined, timeoutMs: number): Promise<GateOutcome> {
    const { runtime, commands } = this.#shared;
    let result: AcquireResult;
    try {
      result = await commands.acquire(keys, owner, leaseMs, runtime.fenceTtlMs, this.#shared.floor(), gate, timeoutMs);
    } catch (error) {
      await commands.rollback(keys, owner, { replies: [], sent: [], validUntil: performance.now() + leaseMs - driftMs(leaseMs) });
      throw error;
    }
    if (result.gate) {
      // Held at the gate: sleep until a release is published, or recheck every master a little later.
      const pttl = result.gate.pttlMs < 0 ? runtime.leaseMs : result.gate.pttlMs;
      return [{ kind: 'busy', retryMs: Math.min(pttl + 1, PROBE_RECHECK_MS) }, true];
    }
    const { replies } = result;
    const votes = replies.map((reply): Vote | undefined => {
      if (!reply?.ok) return undefined;
      const value = reply.value;
      // A busy master's hold ends within its PTTL (unknown: a lease), a millisecond more on Redis's clock.
      return value.kind === 'acquired' ? { took: true, token: value.token } : { took: false, retryMs: (value.pttlMs < 0 ? runtime.leaseMs : value.pttlMs) + 1, holder: value.holder };
    });
    const decision = await decideAcquire(votes, commands.quorum, {
      rollback: (only) => commands.rollback(keys, owner, result, only),
      fenceUp: (token, taken) => commands.fenceUp(keys, owner, token, Math.max(runtime.fenceTtlMs, leaseMs), taken),
      unanswered: () => answeredError(replies) ?? noQuorum(`Lock "${name}" was not acquired`, commands.masters, replies, name, tookIt),
    });
    return [decision.kind === 'acquired' ? { kind: 'acquired', token: decision.token } : decision, false];
  }

  reenter(keys: LockKeys, owner: string, believed: number, leaseMs: number | undefined, name: string): Promise<ReenterOutcome> {
    return this.#shared.commands.reenter(keys, owner, believed, leaseMs, name);
  }

  release(keys: LockKeys, owner: string, believed: number, whole: boolean, name: string): Promise<ReleaseOutcome> {
    return this.#shared.commands.release(keys, owner, believed, whole, name);
  }

  renew(holds: readonly Renewable[], leaseMs: number): Promise<boolean[]> {
    return this.#shared.commands.renew(holds, leaseMs);
  }

  isLocked(keys: LockKeys): Promise<boolean> {
    return this.#shared.commands.isLocked(keys);
  }

  holdCount(keys: LockKeys, owner: string): Promise<number> {
    return this.#shared.commands.holdCount(keys, owner);
  }

  remainingTtlMs(keys: LockKeys): Promise<number | null> {
    return this.#shared.commands.remainingTtlMs(keys);
  }

  forceRelease(keys: LockKeys): Promise<boolean> {
    return this.#shared.commands.forceRelease(keys);
  }
}

/** What a master's answer to a failed attempt was, in a no-quorum error. */
const tookIt = (value: MasterAcquire) => (value.kind === 'acquired' ? 'took it (given back)' : 'held elsewhere');

/** The lock's shared state on a Redlock client: lock.ts's lock over the quorum's commands. */
export function createQuorumLockShared(redlock: RedlockLockShared): LockShared {
  return { runtime: redlock.runtime, commands: new QuorumLock(redlock), renewer: redlock.renewer, keys: lockKeys };
}
