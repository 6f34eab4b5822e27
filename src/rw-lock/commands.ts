// Typed wrappers of the read-write lock's Lua scripts: every reply gets a name here, so nothing
// above compares raw numbers.
import * as lua from '../generated/rw-lock.ts';
import type { LockReads } from '../lock-base.ts';
import { toToken } from '../lock/commands.ts';
import { reenterOutcome, releaseOutcome, type ReenterOutcome, type ReleaseOutcome } from '../runtime/hold.ts';
import { defineScript, type ScriptRunner } from '../runtime/script.ts';
import type { RwLockKeys, RwSideKeys } from './keys.ts';

/** What a first attempt of either side got. `intent`: a refused writer's intent keeps new readers out. */
export type RwAcquireOutcome =
  | { readonly kind: 'acquired'; readonly token: number }
  | { readonly kind: 'busy'; readonly hintMs: number; readonly intent: boolean };

/** The timings of the writer-preferring policy (docs/read-write-lock.md). */
export interface RwSettings {
  /** How long a refused writer's intent keeps new readers out unless renewed by its next attempt. */
  readonly intentMs: number;
  /** A writer waiting behind readers tries again (renewing its intent) at least this often. */
  readonly intentRenewMs: number;
  /** How long a refused reader stays registered as waiting past its retry hint. */
  readonly registerMs: number;
  /** How long the readers a write release admitted keep writers out at most (the read batch). */
  readonly batchMs: number;
}

export const RW_SETTINGS: RwSettings = Object.freeze({ intentMs: 1_500, intentRenewMs: 500, registerMs: 1_000, batchMs: 500 });

/** What renewing a hold needs: its keys and its member. */
export interface RwTarget {
  readonly rw: RwLockKeys;
  readonly member: string;
}

/** Names an acquire script's reply (a refusal's trailing holder, when asked for, is left to the caller). */
export const decodeAcquire = (reply: unknown, fence: string): RwAcquireOutcome => {
  if (Array.isArray(reply)) return { kind: 'busy', hintMs: Number(reply[1]), intent: reply[2] === 1 };
  return { kind: 'acquired', token: toToken(reply, fence) };
};
const readAcquire = defineScript(lua.readAcquire, (reply) => reply);
const writeAcquire = defineScript(lua.writeAcquire, (reply) => reply);
const reenter = defineScript(lua.reenter, reenterOutcome);
const release = defineScript(lua.release, releaseOutcome, 4);
const forceRelease = defineScript(lua.forceRelease, (reply) => reply === 1, 4);
const leave = defineScript(lua.leave, (reply) => Number(reply), 3);
const inspect = defineScript(lua.inspect, (reply) => decodeInspection(reply));
const renew = defineScript(lua.renew, (reply) => (reply as number[]).map((flag) => flag === 1));

/** The read-write lock's scripts with their decoders, for the Redlock commands that run them on every master. */
export const rwScripts = { readAcquire, writeAcquire, reenter, release, forceRelease, leave, inspect, renew } as const;

/**
 * The commands a side of a read-write lock runs: over one server (RwLockCommands), or on every master
 * of a Redlock client with the majority deciding (src/rw-lock/quorum-commands.ts). `lockName` names the
 * lock in a quorum's errors.
 */
export interface RwCommands extends LockReads<RwSideKeys> {
  readonly settings: RwSettings;
  readAcquire(k: RwLockKeys, owner: string, leaseMs: number, fenceTtlMs: number, waitId: string, writeOwner: string, lockName: string): Promise<RwAcquireOutcome>;
  writeAcquire(k: RwLockKeys, owner: string, leaseMs: number, fenceTtlMs: number, waitId: string, lockName: string): Promise<RwAcquireOutcome>;
  reenter(k: RwLockKeys, member: string, believed: number, leaseMs: number | undefined, lockName: string): Promise<ReenterOutcome>;
  release(k: RwLockKeys, member: string, believed: number, whole: boolean, lockName: string): Promise<ReleaseOutcome>;
  leave(k: RwLockKeys, waitId: string): Promise<unknown>;
  renew(targets: readonly RwTarget[], leaseMs: number): Promise<boolean[]>;
}

/** What one read of a side tells: whether it is locked, the lock's time to live, and an owner's hold count. */
export interface RwInspection {
  readonly locked: boolean;
  readonly ttlMs: number;
  readonly count: number;
}

/** The reads of a side, each one call of the layout's inspect script. */
export abstract class RwReads {
  /** The side's state, with `owner`'s hold count (0 without an owner). */
  protected abstract inspect(keys: RwSideKeys, owner: string | undefined): Promise<RwInspection>;

  async isLocked(keys: RwSideKeys): Promise<boolean> {
    return (await this.inspect(keys, undefined)).locked;
  }

  async remainingTtlMs(keys: RwSideKeys): Promise<number | null> {
    const { locked, ttlMs } = await this.inspect(keys, undefined);
    return locked ? ttlMs : null;
  }

  async holdCount(keys: RwSideKeys, owner: string): Promise<number> {
    return (await this.inspect(keys, owner)).count;
  }
}

/** Names an inspect script's reply {locked, ttlMs, count}. */
export const decodeInspection = (reply: unknown): RwInspection => {
  const [locked, ttlMs, count] = (reply as number[]).map(Number);
  return { locked: locked === 1, ttlMs: ttlMs!, count: count! };
};

export class RwLockCommands extends RwReads implements RwCommands {
  readonly settings: RwSettings;
  readonly #runner: ScriptRunner;
  readonly #publish: string;

  constructor(runner: ScriptRunner, publish: string, settings: RwSettings = RW_SETTINGS) {
    super();
    this.#runner = runner;
    this.#publish = publish;
    this.settings = settings;
  }

  /** `writeOwner`: the write hold of the caller's context, which always gets the read hold (downgrade). */
  async readAcquire(k: RwLockKeys, owner: string, leaseMs: number, fenceTtlMs: number, waitId: string, writeOwner: string): Promise<RwAcquireOutcome> {
    const reply = await this.#runner.run(
      readAcquire,
      [k.hash, k.leases, k.intents, k.waiting, k.batch, k.fence],
      [owner, leaseMs, Math.max(fenceTtlMs, leaseMs), waitId, writeOwner, this.settings.registerMs],
    );
    return decodeAcquire(reply, k.fence);
  }

  async writeAcquire(k: RwLockKeys, owner: string, leaseMs: number, fenceTtlMs: number, waitId: string): Promise<RwAcquireOutcome> {
    const reply = await this.#runner.run(
      writeAcquire,
      [k.hash, k.leases, k.intents, k.batch, k.fence],
      [owner, leaseMs, Math.max(fenceTtlMs, leaseMs), waitId, this.settings.intentMs],
    );
    return decodeAcquire(reply, k.fence);
  }

  reenter(k: RwLockKeys, member: string, believed: number, leaseMs: number | undefined): Promise<ReenterOutcome> {
    return this.#runner.run(reenter, [k.hash, k.leases, k.fence], [member, leaseMs ?? 0, believed]);
  }

  release(k: RwLockKeys, member: string, believed: number, whole: boolean): Promise<ReleaseOutcome> {
    return this.#runner.run(
      release,
      [k.hash, k.leases, k.waiting, k.batch, k.toReaders, k.toWriters, k.intents],
      [member, believed, whole ? 1 : 0, this.#publish, this.settings.batchMs],
    );
  }

  /** Takes a wait that ended without the lock out of the intents, the waiting readers and the batch. */
  leave(k: RwLockKeys, waitId: string): Promise<number> {
    return this.#runner.run(leave, [k.intents, k.waiting, k.batch, k.toReaders, k.toWriters], [waitId, this.#publish]);
  }

  /** One flag per hold, in order: true where the hold's lease had not ended and was renewed. */
  renew(targets: readonly RwTarget[], leaseMs: number): Promise<boolean[]> {
    return this.#runner.run(
      renew,
      targets.flatMap((t) => [t.rw.hash, t.rw.leases]),
      [leaseMs, ...targets.map((t) => t.member)],
    );
  }

  forceRelease(keys: RwSideKeys): Promise<boolean> {
    const k = keys.rw;
    return this.#runner.run(forceRelease, [k.hash, k.leases, k.waiting, k.batch, k.toReaders, k.toWriters], [keys.side, this.#publish, this.settings.batchMs]);
  }

  protected inspect(keys: RwSideKeys, owner: string | undefined): Promise<RwInspection> {
    return this.#runner.run(inspect, [keys.rw.hash, keys.rw.leases], [keys.side, owner === undefined ? '' : `${keys.side}:${owner}`]);
  }
}
