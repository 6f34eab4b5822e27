// The Redlock lock: client.lock() on a client of several masters. The lock's scripts run on every
// master; an attempt holds when a majority took it within the validity time, and its fencing token is
// confirmed on a majority before the lease is handed out (the rule is proved in docs/guarantees.md).
import type { Lease } from '../api.ts';
import { LeaseImpl } from '../lease.ts';
import { LockBase } from '../lock-base.ts';
import { lockKeys, type LockKeys } from '../lock/keys.ts';
import { acquire, type Attempt } from '../runtime/acquire.ts';
import { Hold, type HoldScripts } from '../runtime/hold.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { wakeHead } from '../runtime/waiting.ts';
import type { Renewer } from '../runtime/renewable.ts';
import type { AcquireResult, RedlockCommands } from './commands.ts';
import { splitRetryMs } from './quorum.ts';
import { answeredError, noQuorum } from './replies.ts';

/** What every Redlock lock of one client shares. */
export interface RedlockShared {
  readonly runtime: Runtime;
  readonly commands: RedlockCommands;
  readonly renewer: Renewer;
  /** The next token floor: this client's clock in microseconds, increasing. */
  floor(): string;
  /** Lock key -> when an attempt of this client last found it held: a first attempt soon after goes through the gate too. */
  readonly contended: Map<string, number>;
}

/** The clock-drift allowance of a lease: 1 % of it + 2 ms (the Redlock description's). */
export function driftMs(leaseMs: number): number {
  return Math.ceil(leaseMs / 100) + 2;
}

/** A finite wait's attempt settles this long before the wait ends, so that its cause reaches the caller. */
const ANSWER_MARGIN_MS = 100;
/** ... but an attempt is given at least this long (within its validity): a short wait ends as a timeout. */
const MIN_ATTEMPT_MS = 1_000;

/** How long after this client last found a lock held its first attempts on it go through the gate. */
const CONTENDED_MS = 1_000;

/** After the gate was found held, how soon an attempt asks every master again (unless woken before). */
const PROBE_RECHECK_MS = 100;

export class RedlockImpl extends LockBase<LockKeys> {
  readonly #shared: RedlockShared;
  readonly #keys: LockKeys;
  readonly #scripts: HoldScripts;

  constructor(shared: RedlockShared, prefix: string, name: string) {
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
    const { runtime } = this.#shared;
    // A finite wait rides out a lost quorum (a master restarting, a connection coming back) until it
    // ends, then rejects with ERR_LOCK_NO_QUORUM (the frame's doing); the others reject at once.
    const finite = waitMs > 0 && waitMs !== Number.POSITIVE_INFINITY;
    const endsAt = runtime.watchdog.clock.now() + waitMs;
    // The first attempt asks every master at once. A later one (a waiter, woken or timed out) asks the
    // gate master first: under contention the losers stop there, one script call each, and the masters
    // are seldom split between owners. After the gate was found held, an attempt PROBE_RECHECK_MS or
    // more later asks every master again (the gate may hold a stale key that no release will clear).
    let attempts = 0;
    /** When the last attempt found the gate held, if it did. */
    let gateHeldAt: number | undefined;
    const attempt = async (): Promise<Attempt<Lease>> => {
      const now = runtime.watchdog.clock.now();
      const recheck = gateHeldAt !== undefined && now - gateHeldAt >= PROBE_RECHECK_MS;
      // A first attempt on a lock found held lately queues at the gate too, behind the woken waiters,
      // instead of overtaking them with an attempt on every master.
      const quiet = attempts++ === 0 && now - (this.#shared.contended.get(this.#keys.lock) ?? Number.NEGATIVE_INFINITY) > CONTENDED_MS;
      const gate = quiet || recheck ? undefined : this.#shared.commands.gate();
      // No attempt outlives its validity, nor (for a finite wait) the wait: what has not answered
      // by then counts as unreachable, so the wait ends with the cause, ERR_LOCK_NO_QUORUM.
      const lease = leaseMs ?? runtime.leaseMs;
      const left = finite ? endsAt - now - ANSWER_MARGIN_MS : Number.POSITIVE_INFINITY;
      const timeoutMs = Math.min(lease - driftMs(lease), Math.max(left, MIN_ATTEMPT_MS));
      const [outcome, gateHeld] = await this.#attempt(leaseMs, gate, timeoutMs);
      gateHeldAt = gateHeld ? now : undefined;
      if (outcome.kind === 'busy') this.#contended(now);
      return outcome;
    };
    return acquire(runtime, {
      name: this.name,
      waitMs,
      signal,
      channel: this.#keys.channel,
      rule: wakeHead,
      need: 1,
      key: this.#keys.lock,
      leaseMs: leaseMs ?? runtime.leaseMs,
      attempt,
      giveBack: (lease) => (lease as LeaseImpl).giveBack(),
    });
  }

  /** Remembers that this lock was found held now (a bounded map: cleared when it grows large). */
  #contended(now: number): void {
    const { contended } = this.#shared;
    if (contended.size >= 1_000 && !contended.has(this.#keys.lock)) contended.clear();
    contended.set(this.#keys.lock, now);
  }

  /** One attempt on every master for a fresh hold. */
  async #attempt(leaseMs: number | undefined, gate: number | undefined, timeoutMs: number): Promise<[Attempt<Lease>, gateHeld: boolean]> {
    const { runtime, commands, renewer } = this.#shared;
    const { watchdog } = runtime;
    const keys = this.#keys;
    const lease = leaseMs ?? runtime.leaseMs;
    const hold = new Hold(runtime, { name: this.name, key: keys.lock, renewer, scripts: this.#scripts, renewable: leaseMs === undefined });
    if (hold.renewable) watchdog.add(hold);
    const sentAt = watchdog.clock.now();
    let result: AcquireResult;
    try {
      result = await commands.acquire(keys, hold.owner, lease, runtime.fenceTtlMs, this.#shared.floor(), gate, timeoutMs);
    } catch (error) {
      watchdog.delete(hold);
      await commands.rollback(keys, hold.owner, { replies: [], sent: [] });
      throw error;
    }
    if (result.gate) {
      // Held at the gate: sleep until a release is published, or recheck every master a little later.
      watchdog.delete(hold);
      const pttl = result.gate.pttlMs < 0 ? runtime.leaseMs : result.gate.pttlMs;
      return [{ kind: 'busy', retryMs: Math.min(pttl + 1, PROBE_RECHECK_MS) }, true];
    }
    const { replies } = result;
    const taken: number[] = [];
    const tokens: number[] = [];
    const busy: number[] = [];
    const holders = new Map<string, number>();
    replies.forEach((reply, i) => {
      if (!reply?.ok) return;
      if (reply.value.kind === 'acquired') {
        taken.push(i);
        tokens.push(reply.value.token);
      } else {
        busy.push(reply.value.pttlMs);
        holders.set(reply.value.holder, (holders.get(reply.value.holder) ?? 0) + 1);
      }
    });
    const { quorum } = commands;
    if (taken.length < quorum) {
      watchdog.delete(hold);
      // Held by one owner on a majority: sleep until its release is published (or its lease ends).
      // Split between owners: nobody will publish, so every one of them tries again after a few
      // random milliseconds, out of step.
      const held = [...holders.values()].some((n) => n >= quorum);
      const mayHold = replies.flatMap((reply, i) => (reply?.ok && reply.value.kind === 'busy' ? [] : [i]));
      // Settled before the caller hears of it: a rejection leaves nothing behind on the masters that answer.
      if (mayHold.length > 0) await commands.rollback(keys, hold.owner, result, mayHold);
      if (taken.length + busy.length < quorum) {
        throw answeredError(replies) ?? noQuorum(`Lock "${this.name}" was not acquired`, commands.masters, replies, this.name);
      }
      return [{ kind: 'busy', retryMs: retryAfter(busy, quorum - taken.length, runtime.leaseMs, !held) }, false];
    }
    // The token: the largest of the majority's. Confirmed on a majority before the lease is handed out;
    // when a majority proposed that very value, their acquire wrote it already.
    const token = Math.max(...tokens);
    if (tokens.filter((t) => t === token).length < quorum) {
      const confirmed = await commands.fenceUp(keys, hold.owner, token, Math.max(runtime.fenceTtlMs, lease), taken).catch(() => false);
      if (!confirmed) {
        watchdog.delete(hold);
        await commands.rollback(keys, hold.owner, result);
        return [{ kind: 'busy', retryMs: splitRetryMs() }, false];
      }
    }
    hold.acquired(token, sentAt, lease);
    // Validity: lease − elapsed − drift (the hold's deadline has the larger of drift and marginMs).
    if (watchdog.clock.now() >= hold.deadline) {
      await hold.giveBack().catch(() => undefined);
      return [{ kind: 'late' }, false];
    }
    return [{ kind: 'acquired', value: new LeaseImpl(hold, 1, 'lock', runtime.clientId, runtime.closed) }, false];
  }
}

/**
 * How long a busy attempt sleeps at most (a release on any master wakes it earlier): until enough
 * masters' holds end for a majority, or a few ms when the masters were split between owners.
 */
function retryAfter(busyPttls: readonly number[], needed: number, leaseMs: number, split: boolean): number {
  const sorted = busyPttls.map((pttl) => (pttl < 0 ? leaseMs : pttl)).sort((a, b) => a - b);
  const hint = (sorted[Math.max(0, needed - 1)] ?? leaseMs) + 1;
  return split ? Math.min(hint, splitRetryMs()) : hint;
}
