// The read-write lock in the Redisson layout: RReadWriteLock's hash `<name>` (field `mode`, readers
// `<owner>`, the writer `<owner>:write`), a timeout key per read level, and one channel
// `redisson_rwlock:{<name>}` for both sides (0: a read release, 1: a write release). Redisson's
// policy has no writer intents and no read batch: readers get in while the lock is in read mode.
import * as lua from '../generated/rw-lock.ts';
import { reenterOutcome, releaseOutcome, type ReenterOutcome, type ReleaseOutcome } from '../runtime/hold.ts';
import { defineScript, type ScriptRunner } from '../runtime/script.ts';
import { redissonPrefixed, redissonSuffixed } from '../runtime/slot.ts';
import { decodeAcquire, decodeInspection, RW_SETTINGS, RwReads, type RwAcquireOutcome, type RwCommands, type RwInspection, type RwSettings, type RwTarget } from './commands.ts';
import type { RwLockKeys, RwSideKeys } from './keys.ts';

/**
 * RReadWriteLock's keys of `name`. `leases` is the base its read-level timeout keys start with
 * (`{<name>}`); intents, waiting readers and read batches have no keys in this layout (their names
 * are never written).
 */
export function redissonRwLockKeys(name: string): RwLockKeys {
  const channel = redissonPrefixed('redisson_rwlock', name);
  const base = name.includes('{') ? name : `{${name}}`;
  return { hash: name, leases: base, intents: base, waiting: base, batch: base, fence: redissonSuffixed(name, 'fence'), toReaders: channel, toWriters: channel };
}

const readAcquire = defineScript(lua.redissonReadAcquire, (reply) => reply);
const writeAcquire = defineScript(lua.redissonWriteAcquire, (reply) => reply);
const reenter = defineScript(lua.redissonReenter, reenterOutcome);
const release = defineScript(lua.redissonRelease, releaseOutcome, 2);
const forceRelease = defineScript(lua.redissonForceRelease, (reply) => reply === 1, 1);
const inspect = defineScript(lua.redissonInspect, (reply) => decodeInspection(reply));
const renew = defineScript(lua.redissonRenew, (reply) => (reply as number[]).map((flag) => flag === 1));

/** The hash field of a side's owner: `<owner>` reads, `<owner>:write` writes. */
const fieldOf = (side: 'r' | 'w', owner: string) => (side === 'r' ? owner : `${owner}:write`);

/** The read-write lock's commands over RReadWriteLock's keys, on one server or a Cluster. */
export class RedissonRwCommands extends RwReads implements RwCommands {
  readonly settings: RwSettings = RW_SETTINGS;
  readonly #runner: ScriptRunner;
  readonly #publish: string;

  constructor(runner: ScriptRunner, publish: string) {
    super();
    this.#runner = runner;
    this.#publish = publish;
  }

  /** A busy reply's hint: the hash's time to live (a lease when it has none). */
  #decode(reply: unknown, k: RwLockKeys, leaseMs: number): RwAcquireOutcome {
    const outcome = decodeAcquire(reply, k.fence);
    return outcome.kind === 'busy' && outcome.hintMs < 0 ? { kind: 'busy', hintMs: leaseMs, intent: false } : outcome;
  }

  async readAcquire(k: RwLockKeys, owner: string, leaseMs: number, _fenceTtlMs: number, _waitId: string, writeOwner: string): Promise<RwAcquireOutcome> {
    return this.#decode(await this.#runner.run(readAcquire, [k.hash, k.leases, k.fence], [owner, leaseMs, writeOwner]), k, leaseMs);
  }

  async writeAcquire(k: RwLockKeys, owner: string, leaseMs: number): Promise<RwAcquireOutcome> {
    return this.#decode(await this.#runner.run(writeAcquire, [k.hash, k.fence], [owner, leaseMs]), k, leaseMs);
  }

  reenter(k: RwLockKeys, member: string, believed: number, leaseMs: number | undefined): Promise<ReenterOutcome> {
    return this.#runner.run(reenter, [k.hash, k.leases], [member, leaseMs ?? 0, believed]);
  }

  release(k: RwLockKeys, member: string, believed: number, whole: boolean): Promise<ReleaseOutcome> {
    return this.#runner.run(release, [k.hash, k.leases, k.toReaders], [member, believed, whole ? 1 : 0, this.#publish]);
  }

  /** Nothing to leave: this layout keeps no intents and no waiting readers. */
  leave(): Promise<void> {
    return Promise.resolve();
  }

  renew(targets: readonly RwTarget[], leaseMs: number): Promise<boolean[]> {
    return this.#runner.run(
      renew,
      targets.flatMap((t) => [t.rw.hash, t.rw.leases]),
      [leaseMs, ...targets.map((t) => t.member)],
    );
  }

  forceRelease(keys: RwSideKeys): Promise<boolean> {
    return this.#runner.run(forceRelease, [keys.rw.hash, keys.rw.toReaders], [keys.side, this.#publish]);
  }

  protected async inspect(keys: RwSideKeys, owner: string | undefined): Promise<RwInspection> {
    const read = await this.#runner.run(inspect, [keys.rw.hash], [keys.side, owner === undefined ? '' : fieldOf(keys.side, owner)]);
    // A hash without expiry (-1) never ends on its own.
    return read.ttlMs === -1 ? { ...read, ttlMs: Number.POSITIVE_INFINITY } : read;
  }
}
