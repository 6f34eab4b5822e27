// The lock's scripts on every master, each outcome decided by the majority: the typed wrappers of a
// Redlock lock, so nothing above compares raw numbers or counts replies.
import * as lua from '../generated/lock.ts';
import type { LockReads } from '../lock-base.ts';
import { forceRelease, reenter, release, renew, toToken } from './commands.ts';
import type { LockKeys } from './keys.ts';
import type { ReenterOutcome, ReleaseOutcome } from '../runtime/hold.ts';
import { defineScript } from '../runtime/script.ts';
import type { Renewable } from '../runtime/renewable.ts';
import { count, driftMs, gather, type Master, type Reply } from '../topology/quorum-replies.ts';
import { forced, released, renewed } from '../topology/quorum-decide.ts';
import { QuorumReads } from '../topology/quorum-reads.ts';

/** What one master answered to an acquire. */
export type MasterAcquire =
  | { readonly kind: 'acquired'; readonly token: number }
  /** Held there by `holder` (an owner field; '' for a foreign value) for `pttlMs` more (-1: no expiry). */
  | { readonly kind: 'busy'; readonly pttlMs: number; readonly holder: string };
/** The replies of every master when the acquire was decided (undefined: not answered yet). */
export type AcquireReplies = readonly (Reply<MasterAcquire> | undefined)[];
/** An acquire's replies, or (asked at a gate first) the gate's "held" and nothing else sent. */
export interface AcquireResult {
  readonly replies: AcquireReplies;
  /** Each master's call (undefined where none was sent), also those still out when it was decided: the undo follows them. */
  readonly sent: readonly (Promise<MasterAcquire> | undefined)[];
  readonly gate?: { readonly pttlMs: number; readonly holder: string };
  /** performance.now() when the attempt's validity ends (lease − drift from its send): its undo is waited for until then at most. */
  readonly validUntil: number;
}

const acquire = defineScript(lua.quorumAcquire, (reply) => reply as number | string | [number, string]);
const rollback = defineScript(lua.quorumRollback, (reply) => reply === 1);
const fenceUp = defineScript(lua.quorumFenceUp, (reply) => reply === 1);

/** How long an attempt waits for the gate alone before asking the other masters too. */
const GATE_WAIT_MS = 50;

export class RedlockCommands extends QuorumReads implements LockReads<LockKeys> {
  /**
   * The acquire on every master, settled once a majority took it or can no longer take it. With a
   * `gate` (a waiter's attempt under contention), that master is asked first, alone: when it is held
   * there, nothing else is sent and `gate` answers; the others are asked once it was taken. After
   * `timeoutMs` (the validity, or what is left of the wait) the replies so far decide.
   */
  async acquire(keys: LockKeys, owner: string, leaseMs: number, fenceTtlMs: number, floor: string, gate: number | undefined, timeoutMs: number): Promise<AcquireResult> {
    const args = [owner, leaseMs, Math.max(fenceTtlMs, leaseMs), floor, 1];
    const on = async ({ runner }: Master, named = true): Promise<MasterAcquire> => {
      const reply = await runner.run(acquire, [keys.lock, keys.fence], named ? args : [...args.slice(0, 4), 0]);
      if (!Array.isArray(reply)) return { kind: 'acquired', token: toToken(reply, keys.fence) };
      const [code, holder] = reply;
      return { kind: 'busy', pttlMs: code === -1 ? -1 : -2 - code, holder: String(holder) };
    };
    let first: Promise<MasterAcquire> | undefined;
    if (gate !== undefined) {
      first = on(this.masters[gate]!, false);
      // A gate that does not answer at once (a partition, a stalled server) holds nobody up: after
      // GATE_WAIT_MS the others are asked too, and the gate's reply counts when it comes.
      let timer: NodeJS.Timeout | undefined;
      const reply = await Promise.race([
        first.then(
          (value) => value,
          () => undefined,
        ),
        new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), GATE_WAIT_MS))),
      ]);
      clearTimeout(timer);
      if (reply?.kind === 'busy') return { replies: [], sent: [], gate: reply, validUntil: performance.now() };
    }
    const sent: (Promise<MasterAcquire> | undefined)[] = this.masters.map(() => undefined);
    const validUntil = performance.now() + leaseMs - driftMs(leaseMs);
    const replies = await this.settle(
      this.masters,
      (master, i) => (sent[i] = i === gate ? first! : on(master)),
      (replies, done) => {
        const taken = count(replies, (reply) => reply.ok && reply.value.kind === 'acquired');
        return done || this.acquireDecided(replies, taken) ? replies.slice() : undefined;
      },
      timeoutMs,
    );
    this.outstanding(keys.lock, owner, sent, replies);
    return { replies, sent, validUntil };
  }

  /** Raises the fence to `token` on the masters given (those that took the lock): true once a majority of all masters confirmed it. */
  fenceUp(keys: LockKeys, owner: string, token: number, fenceTtlMs: number, indexes: readonly number[]): Promise<boolean> {
    return this.confirmed(indexes, ({ runner }) => runner.run(fenceUp, [keys.lock, keys.fence], [owner, token, fenceTtlMs]));
  }

  /**
   * Re-entry on every master: entered where a majority still holds it, gone where a majority cannot;
   * settled on every master not known down (Quorum.reentered): a re-entry that lengthens the lease
   * resolves once every master that answers within the new lease's validity has it.
   */
  reenter(keys: LockKeys, owner: string, believed: number, leaseMs: number | undefined, lockName: string): Promise<ReenterOutcome> {
    return this.reentered(({ runner }) => runner.run(reenter, [keys.lock, keys.fence], [owner, leaseMs ?? 0, believed]), leaseMs, `Lock "${lockName}" was not re-entered`, lockName);
  }

  /**
   * The release on every master, publishing (one unique message) on a majority (see Quorum.released),
   * settled on every master that answers within 50 ms of the decision (Quorum.settleAll).
   */
  release(keys: LockKeys, owner: string, believed: number, whole: boolean, lockName: string): Promise<ReleaseOutcome> {
    const message = this.message();
    const publishers = this.publishers();
    return this.settleAll(
      this.masters,
      ({ runner }, i) => this.after(i, keys.lock, owner, () => runner.run(release, [keys.lock, keys.channel], [owner, believed, whole ? 1 : 0, publishers[i]!, message])),
      released(this, `Lock "${lockName}" was not released`, lockName),
      undefined,
      // Sent to a master known down too (ioredis queues it): a release must reach one that comes back.
      false,
    );
  }

  /**
   * Gives back, on every master (or those listed: where the attempt did not answer "busy"), whatever a
   * failed attempt took there (and whatever it may still take: on a master that has not answered the
   * acquire, the rollback is sent once it has: `attempt.sent`). Publishes nothing (see quorum-rollback-1.lua).
   * Resolves once the give-back has settled (Quorum.undoAfter); never rejects.
   */
  rollback(keys: LockKeys, owner: string, attempt: Pick<AcquireResult, 'replies' | 'sent' | 'validUntil'>, only?: readonly number[]): Promise<void> {
    return this.undoAfter(attempt.replies, attempt.sent, ({ runner }) => runner.run(rollback, [keys.lock], [owner]), attempt.validUntil, only);
  }

  /** One flag per hold: renewed on a majority (true), or not (false); see Quorum.renewed. */
  renew(holds: readonly Renewable[], leaseMs: number): Promise<boolean[]> {
    return this.settle(
      this.masters,
      ({ runner }) => runner.run(renew, holds.map((hold) => hold.key), [leaseMs, ...holds.map((hold) => hold.owner)]),
      renewed(this, holds.length, `Renewal of ${holds.length} Redlock hold(s)`),
    );
  }

  /** Deletes the lock on every master; true when some master held it. */
  forceRelease(keys: LockKeys): Promise<boolean> {
    const args = [this.publish, this.message()];
    return gather(
      this.masters,
      ({ runner }) => runner.run(forceRelease, [keys.lock, keys.channel], args),
      forced(this, `Lock at "${keys.lock}" was not force-unlocked`),
    );
  }
}
