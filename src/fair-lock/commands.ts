// Typed wrappers of the fair lock's Lua scripts and reads: every reply gets a name here, so nothing
// above compares raw numbers. Every script that reports Redis TIME also feeds the client's RedisClock
// (its estimate for the slot the script ran on).
import * as lua from '../generated/fair-lock.ts';
// The fair lock's hash is a lock hash: its re-entry and renewal are the lock's scripts.
import { HashLockReads, reenter, renew, toToken } from '../lock/commands.ts';
import type { ReenterOutcome, ReleaseOutcome } from '../runtime/hold.ts';
import { defineScript, type ScriptArgs, type ScriptRunner } from '../runtime/script.ts';
import type { Clock } from '../runtime/waiter.ts';
import type { Renewable } from '../runtime/renewable.ts';
import type { Grant } from './grants.ts';
import type { FairLockKeys } from './keys.ts';
import type { RedisClock } from './redis-clock.ts';
import type { FairSettings } from './settings.ts';

/** What an acquire script call got. */
export type AcquireOutcome =
  | { readonly kind: 'acquired'; readonly token: number }
  /** Held (or not grantable yet); in 'wait' mode the owner is queued. `atMs`: the call's Redis TIME in ms. */
  | { readonly kind: 'busy'; readonly pttlMs: number; readonly atMs: number };

/** A release, and to whom it granted the lock, if anyone. */
export type FairReleaseOutcome = ReleaseOutcome & { readonly grant?: Grant | undefined };

export interface LeaveOutcome {
  /** The owner had been granted the lock meanwhile, and gave it up. */
  readonly held: boolean;
  readonly grant: Grant | undefined;
}

/** One owner's state after a heartbeat. */
export type BeatState =
  | { readonly kind: 'granted'; readonly grant: Grant }
  | { readonly kind: 'queued'; readonly owner: string }
  | { readonly kind: 'requeued'; readonly owner: string };

type Reply = readonly (number | string)[];
const asReply = (reply: unknown) => reply as Reply;
// Grants count their receivers, which only SPUBLISH does over a shard: refused on a Cluster without it.
const acquire = defineScript(lua.acquire, asReply, undefined, true);
const release = defineScript(lua.release, asReply);
const leave = defineScript(lua.leave, asReply);
const heartbeat = defineScript(lua.heartbeat, asReply);
const confirm = defineScript(lua.confirm, (reply) => Number(reply));
const forceRelease = defineScript(lua.forceRelease, (reply) => reply === 1);

export class FairLockCommands extends HashLockReads {
  readonly #runner: ScriptRunner;
  readonly #settings: FairSettings;
  readonly #redisClock: RedisClock;
  readonly #clock: Clock;
  readonly #fenceTtlMs: number;
  readonly #publish: string;

  constructor(runner: ScriptRunner, publish: string, fenceTtlMs: number, settings: FairSettings, redisClock: RedisClock, clock: Clock) {
    super(runner);
    this.#runner = runner;
    this.#publish = publish;
    this.#fenceTtlMs = fenceTtlMs;
    this.#settings = settings;
    this.#redisClock = redisClock;
    this.#clock = clock;
  }

  /** KEYS and ARGV[1..4] of every script that can grant. */
  #grantKeys(keys: FairLockKeys): string[] {
    return [keys.lock, keys.queue, keys.deadlines, keys.fence];
  }

  /** The fence's time to live: the scripts make it at least the lease or claim of the hold its token goes to. */
  #grantArgs(keys: FairLockKeys): (string | number)[] {
    return [this.#publish, keys.grantPrefix, this.#settings.claimMs, this.#fenceTtlMs];
  }

  /** Runs a script whose reply carries Redis TIME at `nowIndex`, and samples the clock of its slot with it. */
  async #timed(script: typeof acquire, keys: string[], args: ScriptArgs, nowIndex: number): Promise<Reply> {
    const sentAt = this.#clock.now();
    const reply = await this.#runner.run(script, keys, args);
    this.#redisClock.sample(keys[0]!, Number(reply[nowIndex]), sentAt);
    return reply;
  }

  #grant(keys: FairLockKeys, owner: unknown, token: unknown, nowMs: unknown): Grant | undefined {
    if (owner === undefined) return undefined;
    return { owner: String(owner), token: toToken(token, keys.fence), nowMs: Number(nowMs), claimMs: this.#settings.claimMs };
  }

  /**
   * Takes the lock for the first owner, or ('wait') queues the owners in order; nobody jumps a
   * non-empty queue. One outcome per owner.
   */
  async acquire(keys: FairLockKeys, owners: readonly string[], leaseMs: number, mode: 'try' | 'wait'): Promise<AcquireOutcome[]> {
    const { deadlineMs, queueTtlMs } = this.#settings;
    const args = [...this.#grantArgs(keys), deadlineMs, queueTtlMs, leaseMs, mode, ...owners];
    const reply = await this.#timed(acquire, this.#grantKeys(keys), args, 0);
    return owners.map((_, i): AcquireOutcome => {
      const value = reply[2 + i * 2];
      return reply[1 + i * 2] === 1 ? { kind: 'acquired', token: toToken(value, keys.fence) } : { kind: 'busy', pttlMs: Number(value), atMs: Number(reply[0]) };
    });
  }

  /**
   * One level or the whole hold; the last one grants the lock to the head of the queue, with the
   * token after `token`, the holder's (nobody was issued one since, while it holds the lock).
   */
  async release(keys: FairLockKeys, owner: string, believed: number, whole: boolean, token: number): Promise<FairReleaseOutcome> {
    // Timed: a grant it reports is owned on this reply when its claim provably lasts.
    const reply = await this.#timed(release, this.#grantKeys(keys), [...this.#grantArgs(keys), owner, believed, whole ? 1 : 0, token], 3);
    const left = Number(reply[0]);
    if (left < 0) return { kind: 'gone' };
    return { kind: 'released', left, grant: this.#grant(keys, reply[1], reply[2], reply[3]) };
  }

  /** Takes a waiter that gave up out of the queue; hands on a grant it got meanwhile. */
  async leave(keys: FairLockKeys, owner: string): Promise<LeaveOutcome> {
    const reply = await this.#timed(leave, this.#grantKeys(keys), [...this.#grantArgs(keys), owner], 1);
    return { held: reply[0] === 1, grant: this.#grant(keys, reply[2], reply[3], reply[1]) };
  }

  /**
   * Refreshes these owners' deadlines, re-queues the dropped ones, pumps a free lock. `waiting` is
   * asked at each sending of the script (a NOSCRIPT answer sends it again, after whatever was sent
   * meanwhile): an owner whose wait ended is left out, so that a heartbeat never runs after that
   * owner's `leave` or release and queues it again. One state per owner sent.
   */
  async heartbeat(keys: FairLockKeys, owners: readonly string[], waiting: (owner: string) => boolean = () => true): Promise<BeatState[]> {
    const { deadlineMs, queueTtlMs } = this.#settings;
    let sent: readonly string[] = owners;
    const args = () => {
      sent = owners.filter(waiting);
      return [...this.#grantArgs(keys), deadlineMs, queueTtlMs, ...sent];
    };
    const reply = await this.#timed(heartbeat, this.#grantKeys(keys), args, 0);
    const nowMs = Number(reply[0]);
    return sent.map((owner, i): BeatState => {
      const state = reply[1 + i * 3];
      if (state === 1) return { kind: 'queued', owner };
      if (state === 0) return { kind: 'requeued', owner };
      const pttl = Number(reply[3 + i * 3]);
      return { kind: 'granted', grant: { owner, token: toToken(reply[2 + i * 3], keys.fence), nowMs, claimMs: Math.max(0, pttl) } };
    });
  }

  reenter(keys: FairLockKeys, owner: string, believed: number, leaseMs: number | undefined): Promise<ReenterOutcome> {
    return this.#runner.run(reenter, [keys.lock, keys.fence], [owner, leaseMs ?? 0, believed]);
  }

  /** One flag per hold, in order: true where the owner still held the lock and got the new lease. */
  renew(holds: readonly Renewable[], leaseMs: number): Promise<boolean[]> {
    return this.#runner.run(
      renew,
      holds.map((hold) => hold.key),
      [leaseMs, ...holds.map((hold) => hold.owner)],
    );
  }

  /**
   * Gives a granted owner the full lease (and the fence key at least as long); its fencing token, or
   * undefined when it no longer holds the lock.
   */
  async confirm(keys: FairLockKeys, owner: string, leaseMs: number): Promise<number | undefined> {
    const token = await this.#runner.run(confirm, [keys.lock, keys.fence], [owner, leaseMs]);
    return token === 0 ? undefined : toToken(token, keys.fence);
  }

  forceRelease(keys: FairLockKeys): Promise<boolean> {
    return this.#runner.run(forceRelease, this.#grantKeys(keys), this.#grantArgs(keys));
  }

  /** Whether the lock key holds a lock; a key of another type is an error, not a lock. */
}
