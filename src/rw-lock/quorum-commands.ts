// The read-write lock's scripts on every master, each outcome decided by the majority: the commands
// a side of client.readWriteLock() runs on a Redlock client. Every master keeps the single-server
// layout; an acquire holds where a majority took it within its validity, and its fencing token is
// confirmed on a majority before the lease is handed out (as src/lock/quorum-commands.ts for the lock).
import * as quorumLua from '../generated/rw-lock.ts';
import type { ReenterOutcome, ReleaseOutcome } from '../runtime/hold.ts';
import { defineScript } from '../runtime/script.ts';
import { decodeAcquire, RW_SETTINGS, rwScripts, type RwAcquireOutcome, type RwCommands, type RwSettings, type RwTarget } from './commands.ts';
import type { RwLockKeys, RwSideKeys } from './keys.ts';
import { driftMs } from '../topology/quorum-replies.ts';
import { decideAcquire, forced, released, renewed, type Vote } from '../topology/quorum-decide.ts';
import { Quorum } from '../topology/quorum.ts';
import { answeredError, count, gather, noQuorum, type Master, type Reply } from '../topology/quorum-replies.ts';

/** What one master answered to an acquire: a token, or a refusal naming who refused it ('' for readers, a read batch or an intent). */
type MasterAcquire = { readonly kind: 'acquired'; readonly token: number } | { readonly kind: 'busy'; readonly hintMs: number; readonly intent: boolean; readonly holder: string };
/** One master's read of a side (inspect-2.lua). */
type Inspected = { readonly locked: boolean; readonly ttlMs: number; readonly count: number };

const fenceUp = defineScript(quorumLua.quorumFenceUp, (reply) => reply === 1);
const rollback = defineScript(quorumLua.quorumRollback, (reply) => reply === 1);

/** A reply's value when the master answered, else undefined. */
const valueOf = <R>(reply: Reply<R> | undefined): R | undefined => (reply?.ok ? reply.value : undefined);

/** Whether a master refused an acquire for a writer's intent. */
const refusedForIntent = (reply: Reply<MasterAcquire> | undefined): boolean => {
  const value = valueOf(reply);
  return value?.kind === 'busy' && value.intent;
};

/**
 * The read-write lock's commands on a Redlock client: each script on every master in parallel, each
 * outcome decided by the majority (a side of the lock runs them as it runs RwLockCommands on one
 * server).
 */
export class RedlockRwCommands extends Quorum implements RwCommands {
  readonly settings: RwSettings;
  readonly #floor: () => string;

  /**
   * @param floor the next token floor (the Redlock client's clock in microseconds, increasing)
   */
  constructor(masters: readonly Master[], publish: string, floor: () => string, settings: RwSettings = RW_SETTINGS) {
    super(masters, publish);
    this.#floor = floor;
    this.settings = settings;
  }

  readAcquire(k: RwLockKeys, owner: string, leaseMs: number, fenceTtlMs: number, waitId: string, writeOwner: string, lockName: string): Promise<RwAcquireOutcome> {
    const keys = [k.hash, k.leases, k.intents, k.waiting, k.batch, k.fence];
    const args = [owner, leaseMs, Math.max(fenceTtlMs, leaseMs), waitId, writeOwner, this.settings.registerMs, this.#floor(), 1];
    return this.#acquire(k, `r:${owner}`, leaseMs, fenceTtlMs, waitId, lockName, (master) => master.runner.run(rwScripts.readAcquire, keys, args));
  }

  writeAcquire(k: RwLockKeys, owner: string, leaseMs: number, fenceTtlMs: number, waitId: string, lockName: string): Promise<RwAcquireOutcome> {
    const keys = [k.hash, k.leases, k.intents, k.batch, k.fence];
    const args = [owner, leaseMs, Math.max(fenceTtlMs, leaseMs), waitId, this.settings.intentMs, this.#floor(), 1];
    return this.#acquire(k, `w:${owner}`, leaseMs, fenceTtlMs, waitId, lockName, (master) => master.runner.run(rwScripts.writeAcquire, keys, args));
  }

  /**
   * One acquire on every master, settled once a majority took it or can no longer take it, and within
   * the validity (lease − drift): what has not answered by then counts as unreachable. Whatever a
   * failed attempt may have taken is given back on every master that did not refuse it; a successful
   * one takes its wait out of the masters that refused it (an intent or a reader's registration left
   * there would keep others out for nothing).
   */
  async #acquire(k: RwLockKeys, member: string, leaseMs: number, fenceTtlMs: number, waitId: string, lockName: string, run: (master: Master) => Promise<unknown>): Promise<RwAcquireOutcome> {
    // Each master's call, also those still out when it was decided: the rollback follows them.
    const sent: Promise<MasterAcquire>[] = [];
    const validUntil = performance.now() + leaseMs - driftMs(leaseMs);
    const replies = await this.settle(
      this.masters,
      (master, i) =>
        (sent[i] = (async (): Promise<MasterAcquire> => {
          const reply = await run(master);
          const outcome = decodeAcquire(reply, k.fence);
          if (outcome.kind === 'acquired') return outcome;
          return { ...outcome, holder: String((reply as unknown[]).at(-1)) };
        })()),
      (replies, done) => {
        const taken = count(replies, (reply) => reply.ok && reply.value.kind === 'acquired');
        return done || this.acquireDecided(replies, taken) ? replies.slice() : undefined;
      },
      leaseMs - driftMs(leaseMs),
    );
    this.outstanding(k.hash, member, sent, replies);
    const votes = replies.map((reply): Vote | undefined => {
      const value = valueOf(reply);
      if (!value) return undefined;
      return value.kind === 'acquired' ? { took: true, token: value.token } : { took: false, retryMs: value.hintMs, holder: value.holder };
    });
    const decision = await decideAcquire(votes, this.quorum, {
      rollback: (only) => this.#rollback(k, member, replies, sent, validUntil, only),
      fenceUp: (token, taken) => this.#fenceUp(k, member, token, Math.max(fenceTtlMs, leaseMs), taken, leaseMs - driftMs(leaseMs)),
      unanswered: () => answeredError(replies) ?? noQuorum(`Lock "${lockName}" was not acquired`, this.masters, replies, lockName, (value: MasterAcquire) => (value.kind === 'acquired' ? 'took it (given back)' : 'held elsewhere')),
    });
    if (decision.kind === 'busy') {
      // Refused (not a token left unconfirmed) with an intent among the refusals: a writer waits first.
      const refused = votes.filter((vote) => vote?.took).length < this.quorum;
      return { kind: 'busy', hintMs: decision.retryMs, intent: refused && replies.some(refusedForIntent) };
    }
    const { token, taken } = decision;
    if (taken.length < this.masters.length) void this.leave(k, waitId);
    return { kind: 'acquired', token };
  }

  /** Raises the fence to `token` on the masters given (those that took it): true once a majority of all masters confirmed it. */
  #fenceUp(k: RwLockKeys, member: string, token: number, fenceTtlMs: number, indexes: readonly number[], timeoutMs: number): Promise<boolean> {
    return this.confirmed(indexes, ({ runner }) => runner.run(fenceUp, [k.hash, k.leases, k.fence], [member, token, fenceTtlMs]), timeoutMs);
  }

  /**
   * Gives back a failed attempt's hold on every master (or those listed), each once it answered the
   * attempt (`sent`). Publishes nothing (see quorum-rollback-2.lua). Resolves once the give-back has
   * settled (Quorum.undoAfter); never rejects.
   */
  #rollback(k: RwLockKeys, member: string, replies: readonly (Reply<unknown> | undefined)[], sent: readonly Promise<unknown>[], validUntil: number, only?: readonly number[]): Promise<void> {
    return this.undoAfter(replies, sent, ({ runner }) => runner.run(rollback, [k.hash, k.leases], [member]), validUntil, only);
  }

  /** Re-entry on every master: entered where a majority still holds it, gone where a majority cannot; settled on every master not known down (Quorum.reentered). */
  reenter(k: RwLockKeys, member: string, believed: number, leaseMs: number | undefined, lockName: string): Promise<ReenterOutcome> {
    return this.reentered(({ runner }) => runner.run(rwScripts.reenter, [k.hash, k.leases, k.fence], [member, leaseMs ?? 0, believed]), leaseMs, `Lock "${lockName}" was not re-entered`, lockName);
  }

  /**
   * The release on every master, publishing (one unique message) on a majority (see Quorum.released),
   * settled on every master that answers within 50 ms of the decision (Quorum.settleAll).
   */
  release(k: RwLockKeys, member: string, believed: number, whole: boolean, lockName: string): Promise<ReleaseOutcome> {
    const message = this.message();
    const publishers = this.publishers();
    const keys = [k.hash, k.leases, k.waiting, k.batch, k.toReaders, k.toWriters, k.intents];
    return this.settleAll(
      this.masters,
      ({ runner }, i) => this.after(i, k.hash, member, () => runner.run(rwScripts.release, keys, [member, believed, whole ? 1 : 0, publishers[i]!, this.settings.batchMs, message])),
      released(this, `Lock "${lockName}" was not released`, lockName),
      undefined,
      // Sent to a master known down too (ioredis queues it): a release must reach one that comes back.
      false,
    );
  }

  /**
   * Takes an ended wait out of every master's bookkeeping (intent, waiting reader, read batch). Each
   * master publishes where it freed something (the wait's intent or batch place may be on one master
   * only), one message for all: delivered at a majority's copies, or 20 ms after the first.
   */
  async leave(k: RwLockKeys, waitId: string): Promise<void> {
    const args = [waitId, this.publish, this.message()];
    const keys = [k.intents, k.waiting, k.batch, k.toReaders, k.toWriters];
    await Promise.allSettled(this.masters.map(({ runner }) => runner.run(rwScripts.leave, keys, args)));
  }

  /** One flag per hold: renewed on a majority (true), or not (false); see Quorum.renewed. */
  renew(targets: readonly RwTarget[], leaseMs: number): Promise<boolean[]> {
    const keys = targets.flatMap((t) => [t.rw.hash, t.rw.leases]);
    const args = [leaseMs, ...targets.map((t) => t.member)];
    return this.settle(this.masters, ({ runner }) => runner.run(rwScripts.renew, keys, args), renewed(this, targets.length, `Renewal of ${targets.length} Redlock read-write hold(s)`));
  }

  /** Removes every hold of the side on every master; true when some master had one. */
  forceRelease(keys: RwSideKeys): Promise<boolean> {
    const k = keys.rw;
    const args = [keys.side, this.publish, this.settings.batchMs, this.message()];
    return gather(
      this.masters,
      ({ runner }) => runner.run(rwScripts.forceRelease, [k.hash, k.leases, k.waiting, k.batch, k.toReaders, k.toWriters], args),
      forced(this, `Lock at "${k.hash}" was not force-unlocked`),
    );
  }

  /**
   * The side read on every master, settled by `decide` once the answers so far decide (by default:
   * every answer, a majority at least, once each master answered or failed).
   */
  #inspect<D = Inspected[]>(keys: RwSideKeys, member: string, decide?: (values: readonly Inspected[], done: boolean) => D | undefined): Promise<D> {
    const settle = decide ?? ((values: readonly Inspected[], done: boolean) => (done ? (values as D) : undefined));
    return gather(
      this.masters,
      ({ runner }) => runner.run(rwScripts.inspect, [keys.rw.hash, keys.rw.leases], [keys.side, member]),
      (replies, done) => {
        const values = replies.flatMap((reply) => (reply?.ok ? [reply.value] : []));
        const decided = settle(values, done && values.length >= this.quorum);
        if (decided !== undefined || !done) return decided;
        throw answeredError(replies) ?? noQuorum(`Lock at "${keys.rw.hash}" could not be read`, this.masters, replies);
      },
      true,
    );
  }

  /** Locked when a majority of masters have a live hold of the side; decided at the first majority either way. */
  isLocked(keys: RwSideKeys): Promise<boolean> {
    const n = this.masters.length;
    return this.#inspect(keys, '', (values) => {
      const locked = values.filter((side) => side.locked).length;
      if (locked >= this.quorum) return true;
      return values.length - locked > n - this.quorum ? false : undefined;
    });
  }

  /** How long a majority keeps a hold of the side: the quorum-th longest time left; null when no majority holds it. */
  async remainingTtlMs(keys: RwSideKeys): Promise<number | null> {
    const ttls = (await this.#inspect(keys, '')).filter((side) => side.locked).map((side) => side.ttlMs);
    return this.majorityHas(ttls) ?? null;
  }

  /** The owner's count that a majority has (the quorum-th largest). */
  async holdCount(keys: RwSideKeys, owner: string): Promise<number> {
    const counts = (await this.#inspect(keys, `${keys.side}:${owner}`)).map((side) => side.count);
    return this.majorityHas(counts) ?? 0;
  }
}
