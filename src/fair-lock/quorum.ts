// The fair lock on a Redlock client: exclusion by the quorum, order by the gate. One master, the gate
// (the first by host:port not known down or silent, the same in every client), keeps the waiters' queue: an
// acquire waits its turn there in the single-server fair lock, then takes a Redlock quorum lock of its
// own within what is left of the wait. Queues kept on every master would hand the lock to different
// heads (joins reach the masters in different orders) and agree on nobody: see docs/fair-lock.md.
import type { Lease } from '../api.ts';
import { LockError, LockLostError, LockNotHeldError } from '../errors.ts';
import { FairLockImpl } from './fair-lock.ts';
import { FairWaiters } from './grants.ts';
import { fairLockKeys, type FairLockKeys } from './keys.ts';
import { FAIR_SETTINGS } from './settings.ts';
import { createFairShared, type FairShared } from './shared.ts';
import { LeaseImpl } from '../lease.ts';
import { LockBase, type LockReads } from '../lock-base.ts';
import { lockKeys, type LockKeys } from '../lock/keys.ts';
import { giveBack } from '../multi-lock/multi-lease.ts';
import type { AcquireOptions } from '../options.ts';
import { isUnreachable, settledWithin } from '../runtime/acquire.ts';
import { Hold, type HoldScripts, type ReleaseOutcome } from '../runtime/hold.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { LEAVE_WAIT_MS, noop } from '../runtime/waits.ts';
import type { Renewer } from '../runtime/renewable.ts';
import type { RedlockCommands } from '../lock/quorum-commands.ts';
import { LockImpl, type LockShared } from '../lock/lock.ts';
import { createQuorumLockShared, type RedlockLockShared } from '../lock/quorum.ts';
import { SILENT_MS } from '../topology/quorum-replies.ts';

/** The keys of a fair lock on a Redlock client. */
export interface RedlockFairKeys {
  /** The quorum lock's key: the reads, force-unlock and reentrancy go by it. */
  readonly lock: string;
  /** The quorum lock, on every master: apart from `client.lock(name)`'s keys. */
  readonly quorum: LockKeys;
  /** The fair lock's queue and hold, on the gate master. */
  readonly queue: FairLockKeys;
}

/** The key prefix of the fair lock's quorum lock: `<prefix>:fair-quorum:{name}`, never `client.lock(name)`'s. */
export function fairQuorumPrefix(prefix: string): string {
  return `${prefix}:fair-quorum`;
}

/** How often a wait in a gate's queue looks whether that master is down or silent and the gate moved (no I/O). */
const GATE_CHECK_MS = 100;
/** How long a failed acquire waits for the gate's hold it took to be given back before it rejects. */
const ROLLBACK_MS = 1_000;

/** What every fair lock of one Redlock client shares: the client's Redlock, and a FairShared per master, made when it first serves as the gate. */
export interface RedlockFairShared {
  readonly redlock: RedlockLockShared;
  /** The quorum locks' shared state: lock.ts's lock over the quorum. */
  readonly quorum: LockShared;
  readonly gates: (FairShared | undefined)[];
  /** One registry for every master's waiters: a grant finds its owner whichever gate sent it. */
  readonly waiters: FairWaiters;
}

export function createRedlockFairShared(redlock: RedlockLockShared): RedlockFairShared {
  return { redlock, quorum: createQuorumLockShared(redlock), gates: [], waiters: new FairWaiters() };
}

/** The fair locks' shared state on master `i`: its runner, its Redis clock, its heartbeats. */
function fairSharedAt(shared: RedlockFairShared, i: number): FairShared {
  const { redlock, gates, waiters } = shared;
  if (!gates[i]) {
    const fair = createFairShared(redlock.runtime, FAIR_SETTINGS, redlock.commands.masters[i]!.runner);
    gates[i] = { ...fair, waiters, renewer: gateRenewer(redlock.commands, i, fair.renewer) };
  }
  return gates[i];
}

/**
 * The renewer of the holds in master `i`'s queue (the gate's), under the rules of every quorum call
 * (Quorum.settle over that one master: known down, it answers at once as unreachable) and cut after
 * SILENT_MS, when the gate counts as silent: a frozen gate's renewal is "not renewed this round"
 * then, rather than when the watchdog's bound on every call (half the lease) ends it.
 */
function gateRenewer(commands: RedlockCommands, i: number, renewer: Renewer): Renewer {
  const master = commands.masters[i]!;
  return {
    batch: renewer.batch,
    renew: (batch, leaseMs) =>
      commands.settle(
        [master],
        () => renewer.renew(batch, leaseMs),
        ([reply], done) => {
          if (reply?.ok) return reply.value;
          if (reply) throw reply.error;
          if (!done) return undefined;
          throw new LockError(`Redis could not be reached: the gate ${master.label} did not answer the renewal of ${batch.length} fair lock hold(s) within ${SILENT_MS} ms`, {
            code: 'ERR_LOCK_UNREACHABLE',
          });
        },
        SILENT_MS,
      ),
  };
}

/**
 * The hold of a lease: the quorum hold, which excludes (its token, its lease, its loss are the
 * lease's), and the gate's hold, which keeps the queue's turn. Re-entered and released together,
 * the quorum first; losing only the gate's hold costs no exclusion.
 */
class QueuedHold extends Hold {
  readonly quorum: Hold;
  readonly gate: Hold;
  /**
   * The member leases the two holds came with: kept while this hold is, since a member lease
   * garbage-collected without a release counts as abandoned (its hold is renewed no more).
   */
  readonly members: readonly Lease[];

  constructor(runtime: Runtime, quorum: Hold, gate: Hold, members: readonly Lease[]) {
    super(runtime, { name: quorum.name, key: quorum.key, renewer: quorum.renewer, scripts: QUEUED_SCRIPTS, renewable: false });
    this.quorum = quorum;
    this.gate = gate;
    this.members = members;
    this.heldAs(quorum.token, quorum.acquiredAt);
    // Not in the watchdog: the quorum hold is (renewed, or ended with its fixed lease). Its loss is
    // this hold's, and the gate's hold is given back then, so that the queue moves on (after close(),
    // it ends with its lease, as every hold of the client does).
    const { signal } = quorum;
    const lost = () => {
      this.endedBy(signal.reason as LockLostError);
      if (!runtime.closed.aborted) gate.giveBack().catch(noop);
    };
    if (signal.aborted) lost();
    else signal.addEventListener('abort', lost, { once: true });
  }

  /** The quorum hold's: it aborts when the quorum hold is lost, not when the gate's is. */
  override get signal(): AbortSignal {
    return this.quorum.signal;
  }

  /** maxHoldMs bounds the quorum hold, the one the watchdog renews: its loss is this hold's. */
  override endBy(maxHoldMs: number, nested: boolean): void {
    this.quorum.endBy(maxHoldMs, nested);
  }

  /** The quorum hold's loss, checked against its local deadline now. */
  override check(): LockLostError | undefined {
    this.endedWith(this.quorum.check());
    return this.lost;
  }

  /** The quorum hold's loss, seen by its release: this hold ends with it. */
  endedWith(lost: LockLostError | undefined): void {
    if (lost) this.endedBy(lost);
  }
}

const QUEUED_SCRIPTS: HoldScripts = {
  async release(hold, believed, whole) {
    const { quorum, gate } = hold as QueuedHold;
    // Hold.reenter's give-back of a level that may not have been taken: each member made its own.
    if (believed > hold.count) return { kind: 'released', left: hold.count };
    let outcome: ReleaseOutcome;
    try {
      await quorum.release(whole);
      outcome = { kind: 'released', left: quorum.count };
    } catch (error) {
      // Unanswered (no quorum): the lease may release again; the gate's hold stays meanwhile.
      if (!(error instanceof LockNotHeldError)) throw error;
      (hold as QueuedHold).endedWith(quorum.lost);
      outcome = { kind: 'gone' };
    }
    // Then the gate's hold: the next in line, granted by the gate, finds the quorum lock free.
    const last = outcome.kind === 'gone' || outcome.left === 0;
    if (gate.count > 0) await settledWithin(gate.release(whole || last), LEAVE_WAIT_MS);
    return outcome;
  },
  async reenter(hold, _believed, leaseMs) {
    const { quorum, gate } = hold as QueuedHold;
    const [entered, queued] = await Promise.allSettled([quorum.reenter(leaseMs), gate.count > 0 ? gate.reenter(leaseMs) : Promise.resolve(undefined)]);
    if (entered.status === 'rejected') {
      if (queued.status === 'fulfilled' && queued.value !== undefined) gate.release(false).catch(noop);
      throw entered.reason;
    }
    return entered.value === undefined ? { kind: 'gone' } : { kind: 'entered', count: entered.value };
  },
};

/** The reads answer from the quorum lock; force-unlock clears the quorum lock, then the gate's hold (which grants the head). */
function fairReads(shared: RedlockFairShared): LockReads<RedlockFairKeys> {
  const { commands, runtime } = shared.redlock;
  return {
    isLocked: (keys) => commands.isLocked(keys.quorum),
    remainingTtlMs: (keys) => commands.remainingTtlMs(keys.quorum),
    holdCount(keys, owner) {
      const hold = runtime.context.find(keys.lock);
      return commands.holdCount(keys.quorum, hold instanceof QueuedHold ? hold.quorum.owner : owner);
    },
    async forceRelease(keys) {
      const quorum = await commands.forceRelease(keys.quorum);
      const queue = await fairSharedAt(shared, commands.gate() ?? 0).commands.forceRelease(keys.queue);
      return quorum || queue;
    },
  };
}

/** The acquire options of a member's acquire. */
function memberOptions(waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): AcquireOptions {
  const options: AcquireOptions = { waitMs };
  if (leaseMs !== undefined) options.leaseMs = leaseMs;
  if (signal !== undefined) options.signal = signal;
  return options;
}

/** The private reason a wait in a gate's queue is ended with when that master went down and the gate moved. */
class GateMoved extends Error {}

/**
 * `client.fairLock(name)` on a Redlock client: waits its turn in the gate master's queue, then takes
 * a quorum lock of its own; the lease is the quorum hold's (token, signal), with the gate's hold
 * released after it.
 *
 * @example
 * ```ts
 * const client = new LockClient({ redis: [urlA, urlB, urlC] });
 * await client.fairLock('printer').runExclusive((lease) => print(job, lease.fencingToken));
 * ```
 */
export class RedlockFairLockImpl extends LockBase<RedlockFairKeys> {
  readonly #shared: RedlockFairShared;
  readonly #redlock: RedlockLockShared;
  readonly #prefix: string;
  readonly #keys: RedlockFairKeys;
  /** The quorum lock. */
  readonly #quorum: LockImpl;
  /** The fair lock on each master that served as the gate, made then. */
  readonly #queues: (FairLockImpl | undefined)[] = [];

  constructor(shared: RedlockFairShared, prefix: string, name: string) {
    const quorum = lockKeys(fairQuorumPrefix(prefix), name);
    const keys: RedlockFairKeys = { lock: quorum.lock, quorum, queue: fairLockKeys(prefix, name) };
    super(shared.redlock.runtime, 'fair-lock', name, keys, fairReads(shared));
    this.#shared = shared;
    this.#redlock = shared.redlock;
    this.#prefix = prefix;
    this.#keys = keys;
    this.#quorum = new LockImpl(shared.quorum, fairQuorumPrefix(prefix), name);
  }

  /** The fair lock on master `i`. */
  #queueAt(i: number): FairLockImpl {
    this.#queues[i] ??= new FairLockImpl(fairSharedAt(this.#shared, i), this.#prefix, this.name);
    return this.#queues[i];
  }

  /** Waits its turn at the gate, then takes the quorum lock within what is left of `waitMs`. */
  protected async takeFresh(waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Lease> {
    const { runtime } = this.#redlock;
    const { clock } = runtime.watchdog;
    const endsAt = clock.now() + waitMs;
    const left = () => (waitMs === Number.POSITIVE_INFINITY ? waitMs : Math.max(0, Math.ceil(endsAt - clock.now())));
    const queued = await this.#queue(left, leaseMs, signal);
    let held: Lease;
    try {
      held = await this.#quorum.acquire(memberOptions(left(), leaseMs, signal));
    } catch (error) {
      await settledWithin(giveBack(queued, runtime.closed), ROLLBACK_MS);
      throw error;
    }
    // Each member lease's hold, as its own context has it.
    const quorum = await held.run(() => runtime.context.find(this.#keys.quorum.lock));
    const gate = await queued.run(() => runtime.context.find(this.#keys.queue.lock));
    if (!quorum || !gate || runtime.closed.aborted) {
      await settledWithin(Promise.all([giveBack(held, runtime.closed), giveBack(queued, runtime.closed)]), ROLLBACK_MS);
      if (runtime.closed.aborted) throw runtime.closed.reason;
      throw new LockLostError(`Lock "${this.name}" was lost as it was acquired`, { lockName: this.name });
    }
    return new LeaseImpl(new QueuedHold(runtime, quorum, gate, [held, queued]), 1, 'fair-lock', runtime.clientId, runtime.closed);
  }

  /**
   * The turn in the gate's queue: the fair lock's lease on the gate master. A wait whose gate went
   * down or silent (and another master is the gate now) queues again on the new gate while its wait
   * lasts: the order is best-effort while the gate changes.
   */
  async #queue(left: () => number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Lease> {
    const { commands } = this.#redlock;
    for (;;) {
      // No master up: any of them (the attempt fails as unreachable, or rides it out).
      const gate = commands.gate() ?? 0;
      const moved = new AbortController();
      const gone = () => !commands.usable(gate) && commands.gate() !== undefined && commands.gate() !== gate;
      let timer: NodeJS.Timeout | undefined;
      const watch = () => {
        if (gone()) moved.abort(new GateMoved(`the gate ${commands.masters[gate]!.label} is ${commands.masters[gate]!.down() ? 'down' : 'silent'}`));
        else timer = setTimeout(watch, GATE_CHECK_MS).unref();
      };
      watch();
      try {
        return await this.#queueAt(gate).acquire(memberOptions(left(), leaseMs, signal ? AbortSignal.any([signal, moved.signal]) : moved.signal));
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (left() > 0 && (error instanceof GateMoved || (isUnreachable(error) && gone()))) continue;
        if (!(error instanceof GateMoved)) throw error;
        throw new LockError(`Lock "${this.name}" was not acquired: ${error.message} and its wait ended`, { lockName: this.name, code: 'ERR_LOCK_UNREACHABLE' });
      } finally {
        clearTimeout(timer);
      }
    }
  }
}
