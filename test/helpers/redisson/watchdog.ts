// The stand-in's watchdog, as Redisson's renewal/ package does it since 3.44: one task per instance
// for locks and one for read locks, each a chained timer every third of the lease that renews all
// registered holds in one script per batch (per slot on a Cluster) and drops those whose field is gone.
import type { Executor } from './context.ts';
import { keySlot } from './names.ts';

/**
 * Renews lock hashes whose owner field still exists (renewal/LockTask).
 * KEYS[i]  a lock hash
 * ARGV[1]  the lease in ms; ARGV[i + 1] the owner field of KEYS[i]
 * Returns one 1 (renewed: PEXPIRE to the lease) or 0 (the field is gone) per key.
 */
export const RENEW_LOCKS = `
local leaseMs = ARGV[1]
local rcall = redis.call
local renewed = {}
for i, lockKey in ipairs(KEYS) do
  if rcall('hexists', lockKey, ARGV[i + 1]) == 1 then
    rcall('pexpire', lockKey, leaseMs)
    renewed[i] = 1
  else
    renewed[i] = 0
  end
end
return renewed`;

/**
 * Renews read holds (renewal/ReadLockTask): every rwlock_timeout key of each listed reader that still
 * has a field, and the hash when any of them has.
 * KEYS[2j - 1]  a read-write lock hash; KEYS[2j] its key prefix {<name>}
 * ARGV[1]  the lease in ms; then per hash: the number of readers n, then n reader fields
 * Returns one 1 (renewed) or 0 (no listed reader has a field) per hash.
 */
export const RENEW_READ_LOCKS = `
local leaseMs = ARGV[1]
local rcall = redis.call
local renewed = {}
local at = 2
for j = 1, #KEYS / 2 do
  local lockKey, keyPrefix = KEYS[2 * j - 1], KEYS[2 * j]
  local alive = false
  local readers = tonumber(ARGV[at])
  for k = at + 1, at + readers do
    local holds = rcall('hget', lockKey, ARGV[k])
    if holds then
      alive = true
      for n = tonumber(holds), 1, -1 do
        rcall('pexpire', keyPrefix .. ':' .. ARGV[k] .. ':rwlock_timeout:' .. n, leaseMs)
      end
    end
  end
  at = at + readers + 1
  if alive then rcall('pexpire', lockKey, leaseMs) end
  renewed[j] = alive and 1 or 0
end
return renewed`;

/** Redisson's lockWatchdogBatchSize default: holds per renewal script. */
const BATCH = 100;

interface Holder {
  /** Registrations (one per acquisition; one unlock takes one away). */
  count: number;
  readonly field: string;
}

/** One renewal task: lock name -> thread id -> its registrations, first registered thread first. */
class RenewalTask {
  readonly #redis: Executor;
  readonly #leaseMs: number;
  readonly #read: boolean;
  readonly #names = new Map<string, Map<number, Holder>>();
  readonly #prefixes = new Map<string, string>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  constructor(redis: Executor, leaseMs: number, read: boolean) {
    this.#redis = redis;
    this.#leaseMs = leaseMs;
    this.#read = read;
  }

  get holds(): number {
    let holds = 0;
    for (const threads of this.#names.values()) holds += threads.size;
    return holds;
  }

  add(name: string, threadId: number, field: string, keyPrefix?: string): void {
    let threads = this.#names.get(name);
    if (!threads) this.#names.set(name, (threads = new Map()));
    const holder = threads.get(threadId);
    if (holder) holder.count++;
    else threads.set(threadId, { count: 1, field });
    if (keyPrefix !== undefined) this.#prefixes.set(name, keyPrefix);
    this.#schedule();
  }

  /** One registration of the thread fewer; without a thread id (force unlock): the whole name. */
  cancel(name: string, threadId?: number): void {
    const threads = this.#names.get(name);
    if (!threads) return;
    const holder = threadId === undefined ? undefined : threads.get(threadId);
    if (threadId === undefined) threads.clear();
    else if (holder && --holder.count === 0) threads.delete(threadId);
    if (threads.size === 0) {
      this.#names.delete(name);
      this.#prefixes.delete(name);
    }
  }

  async stop(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#names.clear();
    await this.#running;
  }

  #schedule(): void {
    if (this.#timer || this.#running || this.#names.size === 0 || this.#redis.dead) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#running = this.#renewAll().finally(() => {
        this.#running = undefined;
        this.#schedule();
      });
    }, this.#leaseMs / 3).unref();
  }

  async #renewAll(): Promise<void> {
    for (const names of this.#batches()) {
      try {
        const renewed = (await this.#redis.eval(...this.#script(names))) as number[];
        // Redisson drops one registration of the first thread of each name whose hold is gone.
        names.forEach((name, i) => {
          if (renewed[i] === 0) this.cancel(name, this.#names.get(name)?.keys().next().value);
        });
      } catch {
        // Redisson logs and tries again at the next tick; a dead stand-in stops here.
        if (this.#redis.dead) return;
      }
    }
  }

  /** Names in batches of BATCH, per slot on a Cluster (a script's keys must share a slot). */
  #batches(): string[][] {
    const groups = new Map<number, string[]>();
    for (const name of this.#names.keys()) {
      const slot = this.#redis.cluster ? keySlot(name) : 0;
      groups.set(slot, [...(groups.get(slot) ?? []), name]);
    }
    const batches: string[][] = [];
    for (const names of groups.values()) for (let i = 0; i < names.length; i += BATCH) batches.push(names.slice(i, i + BATCH));
    return batches;
  }

  #script(names: string[]): [string, string[], (string | number)[]] {
    const args: (string | number)[] = [this.#leaseMs];
    if (!this.#read) {
      for (const name of names) args.push([...this.#names.get(name)!.values()][0]!.field);
      return [RENEW_LOCKS, names, args];
    }
    const keys: string[] = [];
    for (const name of names) {
      const fields = [...this.#names.get(name)!.values()].map((holder) => holder.field);
      keys.push(name, this.#prefixes.get(name)!);
      args.push(fields.length, ...fields);
    }
    return [RENEW_READ_LOCKS, keys, args];
  }
}

/** Both of an instance's renewal tasks (LockRenewalScheduler). */
export class Watchdog {
  readonly locks: RenewalTask;
  readonly readLocks: RenewalTask;

  constructor(redis: Executor, leaseMs: number) {
    this.locks = new RenewalTask(redis, leaseMs, false);
    this.readLocks = new RenewalTask(redis, leaseMs, true);
  }

  /** Holds (name and thread) being renewed. */
  get holds(): number {
    return this.locks.holds + this.readLocks.holds;
  }

  async stop(): Promise<void> {
    await Promise.all([this.locks.stop(), this.readLocks.stop()]);
  }
}
