// Typed wrappers of the lock's Lua scripts and reads: every reply gets a name here, so nothing above
// compares raw numbers.
import { LockError } from '../errors.ts';
import * as lua from '../generated/lock.ts';
import { reenterOutcome, releaseOutcome, type ReenterOutcome, type ReleaseOutcome } from '../runtime/hold.ts';
import { defineScript, notALockHash, type ScriptRunner } from '../runtime/script.ts';
import type { Renewable } from '../runtime/renewable.ts';
import type { LockKeys } from './keys.ts';
import type { TakeOutcome } from '../runtime/attempt.ts';
import type { LockTopology } from './lock.ts';

/** What a first attempt got. */
export type AcquireOutcome = { readonly kind: 'acquired'; readonly token: number } | { readonly kind: 'busy'; readonly pttlMs: number };

/** A token from a script's reply, refused unless a positive safe integer. */
export function toToken(value: unknown, key: string): number {
  const token = Number(value);
  if (!Number.isSafeInteger(token) || token <= 0) {
    throw new LockError(`Fencing token ${String(value)} of "${key}" is not a positive safe integer`, { code: 'ERR_LOCK_FENCE_OVERFLOW' });
  }
  return token;
}

const acquire = defineScript(lua.acquire, (reply) => reply as number | string);
/** Re-entry and batch renewal of an owner field in a lock hash: the fair lock's hash is the same shape, and uses these too. */
export const reenter = defineScript(lua.reenter, reenterOutcome);
export const release = defineScript(lua.release, releaseOutcome, 1);
export const renew = defineScript(lua.renew, (reply) => (reply as number[]).map((flag) => flag === 1));
export const forceRelease = defineScript(lua.forceRelease, (reply) => reply === 1, 1);

/** The reads of a lock hash, for every kind whose lock key is one (the lock, the fair lock). */
export class HashLockReads {
  readonly #runner: ScriptRunner;

  constructor(runner: ScriptRunner) {
    this.#runner = runner;
  }

  /** Whether the lock key holds a lock; a key of another type is an error, not a lock. */
  async isLocked(keys: { readonly lock: string }): Promise<boolean> {
    const kind = await this.#runner.read<string>('type', keys.lock);
    if (kind === 'none' || kind === 'hash') return kind === 'hash';
    throw notALockHash(keys.lock, kind);
  }

  /** Milliseconds left on the lock's lease; null when unlocked, Infinity when it never expires. */
  async remainingTtlMs(keys: { readonly lock: string }): Promise<number | null> {
    const [locked, pttl] = await Promise.all([this.isLocked(keys), this.#runner.read<number>('pttl', keys.lock)]);
    if (!locked || pttl === -2) return null;
    return pttl === -1 ? Number.POSITIVE_INFINITY : pttl;
  }

  async holdCount(keys: { readonly lock: string }, owner: string): Promise<number> {
    return Number((await this.#runner.read<string | null>('hget', keys.lock, owner)) ?? 0);
  }
}

/** A job's end: the lock stays taken until `keepMs` after the hold's start, its fencing token (release-2.lua). */
export interface Keep {
  readonly keepMs: number;
  readonly token: number;
}

/** What a lock's release and force release publish on its channel (its waiters wake on any message). */
export interface LockMessages {
  readonly release: string;
  readonly force: string;
}

const RELOCK_MESSAGES: LockMessages = { release: 'release', force: 'force' };
/** Redisson parses every message on a lock channel as a 64-bit integer: an unlock is `0`, a force unlock too. */
export const REDISSON_MESSAGES: LockMessages = { release: '0', force: '0' };

/** The lock's commands on one server or a Cluster. */
export class LockCommands extends HashLockReads implements LockTopology {
  readonly #runner: ScriptRunner;
  readonly #publish: string;
  readonly #leaseMs: number;
  readonly #fenceTtlMs: number;
  readonly #messages: LockMessages;

  /**
   * `leaseMs`, `fenceTtlMs`: the client's (a key without expiry is tried again after its lease;
   * fenceTtlMs 0 is the Redisson layout's token counter); `messages`: what releases publish.
   */
  constructor(runner: ScriptRunner, publish: string, leaseMs: number, fenceTtlMs: number, messages: LockMessages = RELOCK_MESSAGES) {
    super(runner);
    this.#runner = runner;
    this.#publish = publish;
    this.#leaseMs = leaseMs;
    this.#fenceTtlMs = fenceTtlMs;
    this.#messages = messages;
  }

  attempts(keys: LockKeys, _name: string, _waitMs: number, leaseMs: number): (owner: string) => Promise<TakeOutcome> {
    // Busy: sleep until the holder's lease ends, a millisecond more (a Node timer may fire up to one
    // early against Redis's expiry); a key without expiry is tried again after a whole lease.
    return (owner) =>
      this.acquire(keys, owner, leaseMs, this.#fenceTtlMs).then((outcome) =>
        outcome.kind === 'busy' ? { kind: 'busy', retryMs: outcome.pttlMs >= 0 ? outcome.pttlMs + 1 : this.#leaseMs } : outcome,
      );
  }

  acquire(keys: LockKeys, owner: string, leaseMs: number, fenceTtlMs: number): Promise<AcquireOutcome> {
    // A negative integer encodes "busy": -1 (no expiry) or -2 - pttl.
    return this.#runner
      .run(acquire, [keys.lock, keys.fence], [owner, leaseMs, fenceTtlMs === 0 ? 0 : Math.max(fenceTtlMs, leaseMs)])
      .then((reply) => (typeof reply === 'number' && reply < 0 ? { kind: 'busy', pttlMs: reply === -1 ? -1 : -2 - reply } : { kind: 'acquired', token: toToken(reply, keys.fence) }));
  }

  reenter(keys: LockKeys, owner: string, believed: number, leaseMs: number | undefined): Promise<ReenterOutcome> {
    return this.#runner.run(reenter, [keys.lock, keys.fence], [owner, leaseMs ?? 0, believed]);
  }

  release(keys: LockKeys, owner: string, believed: number, whole: boolean, _name?: string, keep?: Keep): Promise<ReleaseOutcome> {
    const args = [owner, believed, whole ? 1 : 0, this.#publish, this.#messages.release];
    return this.#runner.run(release, [keys.lock, keys.channel], keep ? [...args, keep.keepMs, keep.token] : args);
  }

  /** One flag per hold, in order: true where the owner still held the lock and its lease was renewed. */
  renew(holds: readonly Renewable[], leaseMs: number): Promise<boolean[]> {
    return this.#runner.run(
      renew,
      holds.map((hold) => hold.key),
      [leaseMs, ...holds.map((hold) => hold.owner)],
    );
  }

  forceRelease(keys: LockKeys): Promise<boolean> {
    return this.#runner.run(forceRelease, [keys.lock, keys.channel], [this.#publish, this.#messages.force]);
  }
}
