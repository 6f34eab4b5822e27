// Option types, frozen defaults and the validation that runs before any I/O.

/**
 * The parts of an ioredis `Redis` or `Cluster` that relock calls. Any ioredis 5 or 6 client fits;
 * relock never adds commands to it (no `defineCommand`), it only sends EVALSHA/EVAL and a few reads.
 *
 * @example
 * ```ts
 * const redis = new Redis(process.env.REDIS_URL); // yours: relock.close() leaves it open
 * const client = new LockClient({ redis });
 * ```
 */
export interface RedisClient {
  readonly options?:
    | { readonly keyPrefix?: string | undefined; readonly redisOptions?: { readonly keyPrefix?: string | undefined } | undefined }
    | undefined;
  readonly isCluster?: boolean;
  readonly status?: string;
  evalsha(...args: any[]): Promise<unknown>;
  eval(...args: any[]): Promise<unknown>;
  type(...args: any[]): Promise<string>;
  hget(...args: any[]): Promise<string | null>;
  pttl(...args: any[]): Promise<number>;
  duplicate(...args: any[]): unknown;
  subscribe(...args: any[]): Promise<unknown>;
  unsubscribe(...args: any[]): Promise<unknown>;
  quit(...args: any[]): Promise<unknown>;
  disconnect(...args: any[]): void;
  on(event: string, listener: (...args: any[]) => void): unknown;
  off(event: string, listener: (...args: any[]) => void): unknown;
}

/**
 * ioredis connection options, as accepted by `new Redis(options)`; relock reads none of them but
 * `keyPrefix`, which it refuses.
 *
 * @example
 * ```ts
 * new LockClient({ redis: { host: 'redis.internal', port: 6380, password: process.env.REDIS_PASSWORD } });
 * ```
 */
export type RedisConnectionOptions = { readonly keyPrefix?: never } & Record<string, unknown>;

/**
 * Options of `new LockClient(options)`. Unknown keys are refused with a `TypeError`.
 *
 * @example
 * ```ts
 * new LockClient({ redis: 'redis://127.0.0.1:6379', prefix: 'billing', leaseMs: 10_000 });
 * ```
 */
export interface LockClientOptions {
  /**
   * Where Redis is: a URL (`redis://`, `rediss://`), ioredis options, or an ioredis `Redis` /
   * `Cluster` you own (relock duplicates it once for its subscriber and never closes it).
   * A client or options with ioredis `keyPrefix` are refused: use `prefix`.
   * @default 'redis://127.0.0.1:6379'
   */
  redis?: string | RedisClient | RedisConnectionOptions;
  /**
   * Namespace of every key and channel relock writes: `<prefix>:{<name>}`.
   * @default 'relock'
   */
  prefix?: string;
  /**
   * Lease, in milliseconds, of a hold acquired without `leaseMs`: the watchdog renews it every
   * `leaseMs / 3` for as long as it is held, so this is how long a crashed holder blocks others.
   * @default 30000
   */
  leaseMs?: number;
  /**
   * How long, in milliseconds, a lock's fencing-token key outlives its last acquisition. Tokens keep
   * increasing after it expires (they are floored at Redis TIME in microseconds); while it lives they
   * keep increasing even if the Redis clock steps back.
   * @default 3600000 (one hour)
   */
  fenceTtlMs?: number;
}

/**
 * Options of `lock.acquire()` and `lock.runExclusive()`. Unknown keys are refused with a `TypeError`.
 *
 * @example
 * ```ts
 * await lock.acquire({ waitMs: 5_000, signal: AbortSignal.timeout(10_000) });
 * ```
 */
export interface AcquireOptions {
  /**
   * How long to wait for the lock, in milliseconds, before rejecting with `LockTimeoutError`.
   * `0` tries once. The bound holds even while Redis is unreachable.
   * @default Infinity
   */
  waitMs?: number;
  /**
   * A fixed lease in milliseconds: the hold expires after it and is never renewed; `lease.signal`
   * aborts just before. Omitted, the watchdog keeps the hold alive until it is released.
   * @default undefined (watchdog, renewing the client's `leaseMs`)
   */
  leaseMs?: number;
  /** Cancels the wait: the acquire rejects with `signal.reason`. It does not release a lock already held. */
  signal?: AbortSignal;
}

/**
 * Options of `lock.tryAcquire()`.
 *
 * @example
 * ```ts
 * const lease = await lock.tryAcquire({ leaseMs: 60_000 }); // null when someone else holds it
 * ```
 */
export interface TryAcquireOptions {
  /** A fixed lease in milliseconds; omitted, the watchdog keeps the hold alive. @default undefined */
  leaseMs?: number;
}

/** The largest delay a Node timer can hold (2^31 - 1 ms, about 24.8 days). */
export const MAX_TIMER_MS = 2_147_483_647;

export const DEFAULTS = Object.freeze({
  redis: 'redis://127.0.0.1:6379',
  prefix: 'relock',
  leaseMs: 30_000,
  fenceTtlMs: 3_600_000,
  waitMs: Number.POSITIVE_INFINITY,
});

const MAX_NAME_BYTES = 1024;

function show(value: unknown): string {
  const type = value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
  let text: string;
  if (typeof value === 'string') text = JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  else if (typeof value === 'bigint') text = `${value}n`;
  else if (typeof value !== 'object' || value === null) text = String(value);
  else {
    try {
      text = JSON.stringify(value);
    } catch {
      text = Object.prototype.toString.call(value);
    }
  }
  return `\`${text}\` (${type})`;
}

function expected(name: string, what: string, value: unknown, ErrorClass: typeof TypeError | typeof RangeError): never {
  throw new ErrorClass(`Expected \`${name}\` to be ${what}, got ${show(value)}`);
}

/** Checks that an options argument is a plain object with only the named keys. */
export function checkOptions(where: string, options: unknown, keys: readonly string[]): Record<string, unknown> {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    expected(`${where} options`, 'an object', options, TypeError);
  }
  for (const key of Object.keys(options)) {
    if (!keys.includes(key)) {
      throw new TypeError(`Unknown option \`${key}\` in ${where} options; expected one of ${keys.map((k) => `\`${k}\``).join(', ')}`);
    }
  }
  return options as Record<string, unknown>;
}

/** A whole number of milliseconds in [min, max], or undefined when absent. */
export function checkMs(name: string, value: unknown, min: number, max = MAX_TIMER_MS): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number') expected(name, 'a number of milliseconds', value, TypeError);
  if (!Number.isInteger(value) || value < min || value > max) {
    expected(name, `a whole number of milliseconds from ${min} to ${max}`, value, RangeError);
  }
  return value;
}

/** A wait: a non-negative number of milliseconds, or Infinity. */
export function checkWaitMs(value: unknown): number {
  if (value === undefined) return DEFAULTS.waitMs;
  if (typeof value !== 'number') expected('waitMs', 'a non-negative number of milliseconds', value, TypeError);
  if (Number.isNaN(value) || value < 0 || (Number.isFinite(value) && value > MAX_TIMER_MS)) {
    expected('waitMs', `a non-negative number of milliseconds up to ${MAX_TIMER_MS}, or Infinity`, value, RangeError);
  }
  return value;
}

export function checkSignal(value: unknown): AbortSignal | undefined {
  if (value === undefined) return undefined;
  if (!(value instanceof AbortSignal)) expected('signal', 'an AbortSignal', value, TypeError);
  return value;
}

export function checkFunction(name: string, value: unknown): void {
  if (typeof value !== 'function') expected(name, 'a function', value, TypeError);
}

export function checkName(name: unknown): string {
  if (typeof name !== 'string') expected('name', 'a non-empty string', name, TypeError);
  const bytes = Buffer.byteLength(name);
  if (bytes === 0 || bytes > MAX_NAME_BYTES) {
    expected('name', `a non-empty string of at most ${MAX_NAME_BYTES} bytes (it has ${bytes})`, name, RangeError);
  }
  return name;
}

export function checkPrefix(prefix: unknown): string {
  if (prefix === undefined) return DEFAULTS.prefix;
  if (typeof prefix !== 'string') expected('prefix', 'a non-empty string', prefix, TypeError);
  if (prefix.length === 0 || Buffer.byteLength(prefix) > MAX_NAME_BYTES) {
    expected('prefix', `a non-empty string of at most ${MAX_NAME_BYTES} bytes`, prefix, RangeError);
  }
  return prefix;
}

export function isRedisClient(value: unknown): value is RedisClient {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as RedisClient).evalsha === 'function' &&
    typeof (value as RedisClient).duplicate === 'function'
  );
}

/** The redis option: a client, a URL or connection options; never one with ioredis keyPrefix. */
export function checkRedis(value: unknown): string | RedisClient | RedisConnectionOptions {
  if (value === undefined) return DEFAULTS.redis;
  const keyPrefix = isRedisClient(value)
    ? (value.options?.keyPrefix ?? value.options?.redisOptions?.keyPrefix)
    : typeof value === 'object' && value !== null
      ? (value as { keyPrefix?: unknown }).keyPrefix
      : undefined;
  if (keyPrefix !== undefined && keyPrefix !== '') {
    throw new TypeError(
      `Expected \`redis\` without ioredis \`keyPrefix\`, got keyPrefix ${show(keyPrefix)}: ioredis prefixes script keys but not pub/sub channels, so use relock's \`prefix\` option instead`,
    );
  }
  if (typeof value === 'string') {
    if (!/^rediss?:\/\//.test(value)) expected('redis', 'a redis:// or rediss:// URL', value, TypeError);
    return value;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    expected('redis', 'a URL, ioredis options or an ioredis Redis/Cluster instance', value, TypeError);
  }
  return value as RedisClient | RedisConnectionOptions;
}
