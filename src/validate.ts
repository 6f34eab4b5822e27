// The check* functions: every argument is validated here, before any I/O, with a message naming it.
import type { AnyRedisClient, Layout, RedisConnectionOptions } from './options.ts';
import { adapterOf, CLIENTS } from './port/clients.ts';

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

/** The shortest fixed lease: it must outlast a reply and the local safety margin (see marginMs). */
export const MIN_FIXED_LEASE_MS = 5;
/** The shortest watchdog lease: renewed every third of it. */
export const MIN_WATCHDOG_LEASE_MS = 30;

/** A lone surrogate (half of an emoji cut by `slice`): not well-formed UTF-16. */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

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

/** A number of permits (a semaphore's limit, or what one acquire takes): a whole number from 1 to `max`. */
export function checkPermits(value: unknown, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number') expected('permits', 'a whole number of permits', value, TypeError);
  if (!Number.isSafeInteger(value) || value < 1 || value > max) {
    expected('permits', `a whole number from 1 to ${max}${max === Number.MAX_SAFE_INTEGER ? '' : " (the semaphore's limit)"}`, value, RangeError);
  }
  return value;
}

/** A latch's count: a whole number from 1 to Number.MAX_SAFE_INTEGER. */
export function checkCount(value: unknown): number {
  if (typeof value !== 'number') expected('count', 'a whole number', value, TypeError);
  if (!Number.isSafeInteger(value) || value < 1) expected('count', `a whole number from 1 to ${Number.MAX_SAFE_INTEGER}`, value, RangeError);
  return value;
}

/** `replicas`: how many replicas must acknowledge a first acquisition, a whole number from 0 to 100. */
export function checkReplicas(value: unknown): number {
  if (value === undefined) return 0;
  if (typeof value !== 'number') expected('replicas', 'a whole number of replicas', value, TypeError);
  if (!Number.isInteger(value) || value < 0 || value > 100) expected('replicas', 'a whole number from 0 to 100', value, RangeError);
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

/**
 * Names and prefixes become Redis keys as UTF-8: a lone surrogate would turn into U+FFFD there, so two
 * different names would share one key (and every wake-up).
 */
function checkWellFormed(what: string, value: string): void {
  if (LONE_SURROGATE.test(value)) expected(what, 'well-formed UTF-16 (it has a lone surrogate, e.g. an emoji cut in half)', value, TypeError);
}

export function checkName(name: unknown, what = 'name'): string {
  if (typeof name !== 'string') expected(what, 'a non-empty string', name, TypeError);
  checkWellFormed(what, name);
  const bytes = Buffer.byteLength(name);
  if (bytes === 0 || bytes > MAX_NAME_BYTES) {
    expected(what, `a non-empty string of at most ${MAX_NAME_BYTES} bytes (it has ${bytes})`, name, RangeError);
  }
  return name;
}

export function checkPrefix(prefix: unknown): string {
  if (prefix === undefined) return DEFAULTS.prefix;
  if (typeof prefix !== 'string') expected('prefix', 'a non-empty string', prefix, TypeError);
  checkWellFormed('prefix', prefix);
  if (prefix.length === 0 || Buffer.byteLength(prefix) > MAX_NAME_BYTES) {
    expected('prefix', `a non-empty string of at most ${MAX_NAME_BYTES} bytes`, prefix, RangeError);
  }
  return prefix;
}

/**
 * The layout option, and the options that cannot go with Redisson's: `prefix` (its keys have none),
 * `fenceTtlMs` (its token key never expires), several servers (Redlock).
 */
export function checkLayout(o: { layout?: unknown; prefix?: unknown; fenceTtlMs?: unknown; redis?: unknown }): Layout {
  if (o.layout === undefined || o.layout === 'relock') return 'relock';
  if (o.layout !== 'redisson') expected('layout', "'relock' or 'redisson'", o.layout, TypeError);
  const refused = (option: string, why: string) => new TypeError(`Expected no \`${option}\` with \`layout: 'redisson'\`: ${why} (docs/redisson.md)`);
  if (o.prefix !== undefined) throw refused('prefix', "Redisson's lock key is the bare name, with no prefix");
  if (o.fenceTtlMs !== undefined) throw refused('fenceTtlMs', "the fencing tokens come from Redisson's token key, which never expires");
  if (Array.isArray(o.redis)) {
    throw new TypeError(
      "Expected `redis` to be one server or a Cluster with `layout: 'redisson'`, got an array (a Redlock client): Redisson's RedLock is deprecated and keeps no quorum relock could share (docs/redisson.md)",
    );
  }
  return 'redisson';
}

/** The ioredis option: the module (or its `Redis` class, which carries a `Redis` property in ioredis 5 and 6), as `{ Redis }`. */
export function checkIoredisModule(value: unknown): { readonly Redis: new (...args: any[]) => unknown } | undefined {
  if (value === undefined) return undefined;
  const Redis = (value as { Redis?: unknown } | null)?.Redis ?? value;
  if ((typeof value !== 'function' && (typeof value !== 'object' || value === null)) || typeof Redis !== 'function' || typeof (Redis as { prototype?: { evalsha?: unknown } }).prototype?.evalsha !== 'function') {
    expected('ioredis', "the ioredis (or iovalkey) module, as `import Redis from 'ioredis'` gives it", value, TypeError);
  }
  return { Redis: Redis as new (...args: any[]) => unknown };
}

/** The redis option: a client, a URL or connection options; never one with ioredis keyPrefix. */
export function checkRedis(value: unknown): string | AnyRedisClient | RedisConnectionOptions {
  if (value === undefined) return DEFAULTS.redis;
  const adapter = adapterOf(value);
  const keyPrefix = adapter ? adapter.keyPrefix?.(value as AnyRedisClient) : typeof value === 'object' && value !== null ? (value as { keyPrefix?: unknown }).keyPrefix : undefined;
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
    expected('redis', CLIENTS, value, TypeError);
  }
  // `redis: createClient().connect()`: node-redis's connect() returns a promise of the client.
  if (typeof (value as { then?: unknown }).then === 'function') {
    throw new TypeError(`Expected \`redis\` to be ${CLIENTS}, got a Promise: did you forget await? (\`redis: await createClient().connect()\`)`);
  }
  if (isBunRedisClient(value)) {
    throw new TypeError(
      `Expected \`redis\` to be ${CLIENTS}, got a Bun.RedisClient, which relock does not support: its subscriber connection reconnects without subscribing again (waiters would miss every release), it has no Cluster client and no per-command timeout; on Bun, pass a URL or an ioredis client (docs/compatibility.md#runtimes)`,
    );
  }
  const refusal = adapter?.refusal?.(value as AnyRedisClient);
  if (refusal !== undefined) throw new TypeError(`Expected \`redis\` to be ${CLIENTS}, ${refusal}`);
  if (!adapter) checkConnectionOptions(value);
  return value as AnyRedisClient | RedisConnectionOptions;
}

/** Bun's own client, `Bun.RedisClient` (only on Bun): refused, as measured on Bun 1.4 (test/runtimes/bun-redis-client.mjs). */
function isBunRedisClient(value: object): boolean {
  const RedisClient = (globalThis as { Bun?: { RedisClient?: unknown } }).Bun?.RedisClient;
  return typeof RedisClient === 'function' && value instanceof RedisClient;
}

/**
 * Every option name of ioredis 5 and 6 (`RedisOptions`: the common, standalone, sentinel and Node
 * `net` connect options). Anything else in plain options is a mistake (a client's own properties
 * spread into options, or another library's options) that would otherwise connect to the default
 * 127.0.0.1:6379 and lock there.
 */
const IOREDIS_OPTIONS = new Set(
  (
    'Connector retryStrategy commandTimeout blockingTimeout blockingTimeoutGrace socketTimeout keepAlive noDelay connectionName ' +
    'disableClientInfo clientInfoTag username password db autoResubscribe autoResendUnfulfilledCommands reconnectOnError readOnly ' +
    'stringNumbers protocol replyMapping connectTimeout monitor maxRetriesPerRequest maxLoadingRetryTime enableAutoPipelining ' +
    'autoPipeliningIgnoredCommands offlineQueue commandQueue enableOfflineQueue enableReadyCheck lazyConnect scripts himportFieldsets ' +
    'keyPrefix showFriendlyErrorStack name role tls sentinelUsername sentinelPassword sentinels path family sentinelRetryStrategy ' +
    'sentinelReconnectStrategy preferredSlaves disconnectTimeout sentinelCommandTimeout enableTLSForSentinelMode sentinelTLS natMap ' +
    'updateSentinels sentinelMaxConnections failoverDetector host port localAddress localPort hints lookup keepAliveInitialDelay ' +
    'autoSelectFamily autoSelectFamilyAttemptTimeout blockList timeout onread fd allowHalfOpen readable writable signal'
  ).split(' '),
);

/** Plain ioredis options only: a class instance that is no ioredis client, or an unknown key, is refused. */
function checkConnectionOptions(value: object): void {
  const proto = Object.getPrototypeOf(value) as unknown;
  const kind = (value as object).constructor?.name || 'a class';
  if (proto !== Object.prototype && proto !== null) {
    throw new TypeError(
      `Expected \`redis\` to be ${CLIENTS}, got an instance of ${kind}: relock cannot use it (no client of these families, and not plain options)`,
    );
  }
  const unknown = Object.keys(value).filter((key) => !IOREDIS_OPTIONS.has(key));
  if (unknown.length > 0) {
    throw new TypeError(
      `Expected \`redis\` options to hold ioredis options only, got ${unknown.map((key) => `\`${key}\``).join(', ')} (no ioredis option has ${unknown.length > 1 ? 'these names' : 'this name'}): options with an unknown key would connect to the default 127.0.0.1:6379`,
    );
  }
}
