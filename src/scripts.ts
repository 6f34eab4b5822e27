// Typed wrappers around the Lua scripts and the few plain reads: EVALSHA first, EVAL only when Redis
// answers NOSCRIPT, nothing ever added to the client. The only module that sends lock commands.
import { acquire, forceRelease, release, renew } from './generated/scripts.ts';
import { LockError } from './errors.ts';
import type { LockKeys } from './keys.ts';
import type { RedisClient } from './options.ts';

interface Script {
  readonly file: string;
  readonly sha1: string;
  readonly source: string;
}

/** What the acquire script answered. */
export type AcquireReply =
  | { readonly acquired: false; readonly pttl: number } // held by another owner (pttl -2: ours is gone)
  | { readonly acquired: true; readonly count: number; readonly token: number }; // first (count 1, token) or re-entered

const PUBLISH = 'publish';

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * A WRONGTYPE from Redis means the key space holds something else under a lock's keys (Redis 7
 * starts the message with it, older servers wrap script errors around it). Scripts check before
 * they write, so nothing was changed.
 */
function wrap(error: unknown, keys: LockKeys | undefined): unknown {
  const message = errorMessage(error);
  if (!keys) return error;
  if (message.includes('WRONGTYPE')) {
    return new LockError(`Redis key "${keys.lock}" or "${keys.fence}" holds a value that is not relock's (WRONGTYPE); relock left it untouched`, {
      cause: error,
    });
  }
  // An ACL user allowed the keys but not the channel: the script stopped before any write.
  if (/can't publish to the channel/.test(message)) {
    return new LockError(`Not allowed to publish on "${keys.channel}" (ACL): grant the channel pattern &<prefix>:*; nothing was changed`, {
      cause: error,
    });
  }
  return error;
}

function toToken(value: unknown, key: string): number {
  const token = Number(value);
  if (!Number.isSafeInteger(token) || token <= 0) {
    throw new LockError(`Fencing token ${String(value)} of "${key}" is not a positive safe integer`);
  }
  return token;
}

export class Commands {
  readonly #redis: RedisClient;

  constructor(redis: RedisClient) {
    this.#redis = redis;
  }

  async #run(script: Script, keys: readonly string[], args: readonly (string | number)[], lock?: LockKeys): Promise<unknown> {
    try {
      try {
        return await this.#redis.evalsha(script.sha1, keys.length, ...keys, ...args);
      } catch (error) {
        if (!errorMessage(error).includes('NOSCRIPT')) throw error;
        return await this.#redis.eval(script.source, keys.length, ...keys, ...args);
      }
    } catch (error) {
      throw wrap(error, lock);
    }
  }

  async acquire(keys: LockKeys, owner: string, leaseMs: number, believed: number, fenceTtlMs: number): Promise<AcquireReply> {
    const reply = (await this.#run(acquire, [keys.lock, keys.fence], [owner, leaseMs, believed, fenceTtlMs], keys)) as [number, number | string];
    const [count, value] = reply;
    if (count === 0) return { acquired: false, pttl: Number(value) };
    return { acquired: true, count, token: count === 1 ? toToken(value, keys.lock) : 0 };
  }

  /** The owner's hold count after the release, or -1 when the owner held nothing. */
  async release(keys: LockKeys, owner: string, believed: number): Promise<number> {
    return Number(await this.#run(release, [keys.lock, keys.channel], [owner, believed, PUBLISH, 'release'], keys));
  }

  /** One flag per hold, in order: true where the owner still held the lock and its lease was renewed. */
  async renew(holds: readonly { readonly keys: LockKeys; readonly owner: string }[], leaseMs: number): Promise<boolean[]> {
    const reply = (await this.#run(
      renew,
      holds.map((hold) => hold.keys.lock),
      [leaseMs, ...holds.map((hold) => hold.owner)],
    )) as number[];
    return reply.map((flag) => flag === 1);
  }

  async forceRelease(keys: LockKeys): Promise<boolean> {
    return (await this.#run(forceRelease, [keys.lock, keys.channel], [PUBLISH, 'force'], keys)) === 1;
  }

  /** Whether the lock key holds a lock; a key of another type is an error, not a lock. */
  async isLocked(keys: LockKeys): Promise<boolean> {
    const kind = await this.#redis.type(keys.lock);
    if (kind === 'none' || kind === 'hash') return kind === 'hash';
    throw wrap(new Error(`WRONGTYPE the key holds a ${kind}`), keys);
  }

  /** Milliseconds left on the lock's lease; null when unlocked, Infinity when it never expires. */
  async remainingTtlMs(keys: LockKeys): Promise<number | null> {
    const [locked, pttl] = await Promise.all([this.isLocked(keys), this.#redis.pttl(keys.lock)]);
    if (!locked || pttl === -2) return null;
    return pttl === -1 ? Number.POSITIVE_INFINITY : pttl;
  }

  async holdCount(keys: LockKeys, owner: string): Promise<number> {
    try {
      return Number((await this.#redis.hget(keys.lock, owner)) ?? 0);
    } catch (error) {
      throw wrap(error, keys);
    }
  }
}
