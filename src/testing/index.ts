/**
 * A Redis for integration tests, found the way relock's own tests find theirs: `REDIS_URL`, else a
 * private `redis-server` on a free port, else a testcontainers container; stopped at the end.
 *
 * @module relock/testing
 */
import { checkMs, checkOptions } from '../validate.ts';
import { locate, SOURCES, type RedisSource } from './locate.ts';

export type { RedisSource } from './locate.ts';

/**
 * Options of {@link startRedis}.
 */
export interface StartRedisOptions {
  /**
   * The sources to try, in order; the first that gives a Redis wins.
   *
   * - `'REDIS_URL'`: the server the `REDIS_URL` environment variable names (it must answer `PING`;
   *   one that does not is an error, not a reason to try the next source). Shared: `stop()` leaves
   *   it running and its data alone, so give your tests their own key prefix.
   * - `'redis-server'`: a private `redis-server` from the `PATH`, on a free port of 127.0.0.1, with
   *   no persistence; killed by `stop()`, and when the process exits.
   * - `'testcontainers'`: a container of {@link StartRedisOptions.image}, when the `testcontainers`
   *   package is installed and a Docker engine answers; removed by `stop()`.
   *
   * @default ['REDIS_URL', 'redis-server', 'testcontainers']
   */
  sources?: readonly RedisSource[];
  /**
   * Extra command-line arguments for a private `redis-server`, e.g. `['--maxmemory', '64mb']`.
   * Ignored by the other sources.
   * @default []
   */
  args?: readonly string[];
  /**
   * The image a testcontainers Redis runs.
   * @default 'redis:7-alpine'
   */
  image?: string;
  /**
   * How long a source may take to answer, in milliseconds: `REDIS_URL`'s connection, a private
   * server's start, a container's start (including pulling its image). When it is not given, a
   * container gets 120000.
   * @default 10000
   */
  timeoutMs?: number;
}

/**
 * A Redis that {@link startRedis} found or started. `await using redis = await startRedis()`
 * stops it at the end of the block.
 */
export interface TestRedis extends AsyncDisposable {
  /** `redis://host:port`: pass it to `new LockClient({ redis: url })` or to ioredis. */
  readonly url: string;
  /** The host to connect to. */
  readonly host: string;
  /** The port to connect to. */
  readonly port: number;
  /** Where it came from. */
  readonly source: RedisSource;
  /**
   * Stops what {@link startRedis} started: kills a private `redis-server` (and removes its
   * directory) or stops the container; leaves a `REDIS_URL` server alone. Close your clients
   * first. Idempotent.
   */
  stop(): Promise<void>;
}

const KEYS = ['sources', 'args', 'image', 'timeoutMs'] as const;

function checkStrings(name: string, value: unknown, allowed?: readonly string[]): readonly string[] | undefined {
  if (value === undefined) return undefined;
  const what = allowed ? `an array of ${allowed.map((item) => `'${item}'`).join(', ')}` : 'an array of strings';
  if (!Array.isArray(value)) throw new TypeError(`Expected \`${name}\` to be ${what}, got \`${String(value)}\` (${typeof value})`);
  for (const item of value) {
    if (typeof item !== 'string' || (allowed && !allowed.includes(item))) {
      throw new TypeError(`Expected \`${name}\` to be ${what}, got ${JSON.stringify(item) ?? String(item)} in it`);
    }
  }
  return value as string[];
}

/**
 * Finds or starts a Redis for integration tests: the server `REDIS_URL` names when it is set;
 * else a private `redis-server` from the `PATH` on a free port (no persistence, killed by `stop()`
 * and when the process exits); else a `redis:7-alpine` container through testcontainers, when that
 * package is installed and a Docker engine answers. When none works, it rejects with an `Error`
 * that says, for each source, why not and how to provide it.
 *
 * Bad options throw a `TypeError` or `RangeError` naming the option, before anything starts.
 *
 * @example
 * ```ts
 * import { LockClient } from 'relock';
 * import { startRedis } from 'relock/testing';
 *
 * await using redis = await startRedis();
 * const client = new LockClient({ redis: redis.url });
 * try {
 *   await client.lock('job').runExclusive(() => runTheJob());
 * } finally {
 *   await client.close();
 * }
 * ```
 */
export async function startRedis(options?: StartRedisOptions): Promise<TestRedis> {
  const given = checkOptions('startRedis', options, KEYS) as StartRedisOptions;
  const sources = (checkStrings('sources', given.sources, SOURCES) as readonly RedisSource[] | undefined) ?? SOURCES;
  if (sources.length === 0) throw new RangeError('Expected `sources` to name at least one source, got `[]` (array)');
  const args = checkStrings('args', given.args) ?? [];
  if (given.image !== undefined && (typeof given.image !== 'string' || given.image === '')) {
    throw new TypeError(`Expected \`image\` to be a non-empty string, got \`${String(given.image)}\` (${typeof given.image})`);
  }
  const timeoutMs = checkMs('timeoutMs', given.timeoutMs, 1);
  const found = await locate({
    sources,
    args,
    image: given.image ?? 'redis:7-alpine',
    timeoutMs,
  });
  const stop = () => found.stop();
  return { url: found.url, host: found.host, port: found.port, source: found.source, stop, [Symbol.asyncDispose]: stop };
}
