// The lock's scripts on every master, each outcome decided by the majority: the typed wrappers of a
// Redlock lock, so nothing above compares raw numbers or counts replies.
import { randomUUID } from 'node:crypto';
import { LockError } from '../errors.ts';
import * as lua from '../generated/redlock.ts';
import type { LockReads } from '../lock-base.ts';
import { forceRelease, reenter, release, renew } from '../lock/commands.ts';
import type { LockKeys } from '../lock/keys.ts';
import type { ReenterOutcome, ReleaseOutcome } from '../runtime/hold.ts';
import { defineScript } from '../runtime/script.ts';
import type { Renewable } from '../runtime/watchdog.ts';
import { answeredError, count, gather, noQuorum, pending, type Master, type Reply } from './quorum.ts';
import { QuorumReads } from './reads.ts';

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
  readonly gate?: { readonly pttlMs: number; readonly holder: string };
}

/** A token from a master's reply, refused unless a positive safe integer. */
function toToken(value: unknown, key: string): number {
  const token = Number(value);
  if (!Number.isSafeInteger(token) || token <= 0) {
    throw new LockError(`Fencing token ${String(value)} of "${key}" is not a positive safe integer`, { code: 'ERR_LOCK_FENCE_OVERFLOW' });
  }
  return token;
}

const acquire = defineScript(lua.acquire, (reply) => reply as number | string | [number, string]);
const rollback = defineScript(lua.rollback, (reply) => reply === 1);
const fenceUp = defineScript(lua.fenceUp, (reply) => reply === 1);

const isOk = (reply: Reply<unknown>) => reply.ok;

/** How long an attempt waits for the gate alone before asking the other masters too. */
const GATE_WAIT_MS = 50;

export class RedlockCommands extends QuorumReads implements LockReads<LockKeys> {
  readonly #publish: string;
  /** Release messages are unique (`rl:<nonce>:<seq>`), so a subscriber counts each release's copies. */
  readonly #nonce = randomUUID().slice(0, 8);
  #seq = 0;

  /** Master indexes sorted by host:port. */
  readonly #byLabel: readonly number[];

  constructor(masters: readonly Master[], publish: string) {
    super(masters);
    this.#byLabel = [...masters.keys()].sort((a, b) => (masters[a]!.label < masters[b]!.label ? -1 : 1));
    this.#publish = publish;
  }

  #message(): string {
    return `rl:${this.#nonce}:${++this.#seq}`;
  }

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
      if (reply?.kind === 'busy') return { replies: [], gate: reply };
    }
    const replies = await gather(
      this.masters,
      (master, i) => (i === gate ? first! : on(master)),
      (replies, done) => {
        // Decided once a majority took it; or once it cannot, and either a majority answered (it is held)
        // or too few can still answer (no quorum): the error must say which.
        const taken = count(replies, (reply) => reply.ok && reply.value.kind === 'acquired');
        const answered = count(replies, isOk);
        const left = pending(replies);
        const decided = taken >= this.quorum || (taken + left < this.quorum && (answered >= this.quorum || answered + left < this.quorum));
        return done || decided ? replies.slice() : undefined;
      },
      true,
      timeoutMs,
    );
    return { replies };
  }

  /**
   * The masters a release publishes on: a majority, the first by host:port that are not known down,
   * so the gate is one of them (a woken waiter finds the gate released). The subscribers deliver a
   * release once a majority has published it.
   */
  #publishers(): Set<number> {
    const up = this.#byLabel.filter((i) => !this.masters[i]!.down());
    return new Set((up.length >= this.quorum ? up : this.#byLabel).slice(0, this.quorum));
  }

  /** The gate of waiters' attempts: the first master by host:port that is not known down (the same in every client). */
  gate(): number | undefined {
    return this.#byLabel.find((i) => !this.masters[i]!.down());
  }

  /** Raises the fence to `token` on the masters given (those that took the lock): true once a majority of all masters confirmed it. */
  fenceUp(keys: LockKeys, owner: string, token: number, fenceTtlMs: number, indexes: readonly number[]): Promise<{ confirmed: boolean; replies: readonly (Reply<boolean> | undefined)[] }> {
    const masters = indexes.map((i) => this.masters[i]!);
    return gather(
      masters,
      ({ runner }) => runner.run(fenceUp, [keys.lock, keys.fence], [owner, token, fenceTtlMs]),
      (replies, done) => {
        const yes = count(replies, (reply) => reply.ok && reply.value);
        if (yes >= this.quorum) return { confirmed: true, replies: replies.slice() };
        return done || yes + pending(replies) < this.quorum ? { confirmed: false, replies: replies.slice() } : undefined;
      },
      true,
    );
  }

  /** Re-entry on every master: entered where a majority still holds it, gone where a majority cannot. */
  reenter(keys: LockKeys, owner: string, believed: number, leaseMs: number | undefined, lockName: string): Promise<ReenterOutcome> {
    const n = this.masters.length;
    return gather(
      this.masters,
      ({ runner }) => runner.run(reenter, [keys.lock, keys.fence], [owner, leaseMs ?? 0, believed]),
      (replies, done) => {
        const entered = replies.filter((reply) => reply?.ok && reply.value.kind === 'entered').map((reply) => (reply as { value: { count: number } }).value.count);
        if (entered.length >= this.quorum) return { kind: 'entered', count: Math.max(...entered) };
        if (count(replies, (reply) => reply.ok && reply.value.kind === 'gone') > n - this.quorum) return { kind: 'gone' };
        if (!done) return undefined;
        throw answeredError(replies) ?? noQuorum(`Lock "${lockName}" was not re-entered`, this.masters, replies, lockName);
      },
      true,
    );
  }

  /**
   * The release on every master (it publishes where it deletes). Released when a majority released
   * it, or when some did and too few can answer "gone"; gone when a majority held nothing.
   */
  release(keys: LockKeys, owner: string, believed: number, whole: boolean, lockName: string): Promise<ReleaseOutcome> {
    const message = this.#message();
    const publishers = this.#publishers();
    return gather(
      this.masters,
      ({ runner }, i) => runner.run(release, [keys.lock, keys.channel], [owner, believed, whole ? 1 : 0, publishers.has(i) ? this.#publish : '', message]),
      (replies, done) => {
        const lefts = replies.filter((reply) => reply?.ok && reply.value.kind === 'released').map((reply) => (reply as { value: { left: number } }).value.left);
        const gone = count(replies, (reply) => reply.ok && reply.value.kind === 'gone');
        if (gone >= this.quorum) return { kind: 'gone' };
        if (lefts.length >= this.quorum || (lefts.length > 0 && gone + pending(replies) < this.quorum)) return { kind: 'released', left: Math.max(...lefts) };
        if (!done) return undefined;
        if (lefts.length > 0) return { kind: 'released', left: Math.max(...lefts) };
        if (count(replies, (reply) => !reply.ok) === 0) return { kind: 'gone' };
        throw answeredError(replies) ?? noQuorum(`Lock "${lockName}" was not released`, this.masters, replies, lockName);
      },
    );
  }

  /**
   * Gives back, on every master (or those listed: where the attempt did not answer "busy"), whatever a
   * failed attempt took there (and whatever it may still take: the rollback follows the acquire on each
   * connection). Publishes nothing (see rollback-1.lua).
   */
  rollback(keys: LockKeys, owner: string, only?: readonly number[]): void {
    for (const i of only ?? this.masters.keys()) this.masters[i]!.runner.run(rollback, [keys.lock], [owner]).catch(() => undefined);
  }

  /**
   * One flag per hold: renewed on a majority (true), or held by too few to be (false). A hold that
   * only unreachable masters could decide fails the batch: the watchdog tries again, and the hold's
   * deadline ends it if no majority comes back in time.
   */
  renew(holds: readonly Renewable[], leaseMs: number): Promise<boolean[]> {
    const n = this.masters.length;
    const keys = holds.map((hold) => hold.key);
    const args = [leaseMs, ...holds.map((hold) => hold.owner)];
    return gather(
      this.masters,
      ({ runner }) => runner.run(renew, keys, args),
      (replies, done) => {
        const flags: boolean[] = [];
        for (let i = 0; i < holds.length; i++) {
          const yes = count(replies, (reply) => reply.ok && reply.value[i] === true);
          const no = count(replies, (reply) => reply.ok && reply.value[i] === false);
          if (yes >= this.quorum) flags.push(true);
          else if (no > n - this.quorum) flags.push(false);
          else if (done) throw noQuorum(`Renewal of ${holds.length} Redlock hold(s)`, this.masters, replies);
          else return undefined;
        }
        return flags;
      },
      true,
    );
  }

  /** Deletes the lock on every master; true when some master held it. */
  forceRelease(keys: LockKeys): Promise<boolean> {
    const args = [this.#publish, this.#message()];
    return gather(
      this.masters,
      ({ runner }) => runner.run(forceRelease, [keys.lock, keys.channel], args),
      (replies, done) => {
        if (!done) return undefined;
        if (count(replies, (reply) => reply.ok && reply.value) > 0) return true;
        if (count(replies, isOk) >= this.quorum) return false;
        throw answeredError(replies) ?? noQuorum(`Lock at "${keys.lock}" was not force-unlocked`, this.masters, replies);
      },
    );
  }
}
