// The client families relock knows, and the one place that tells which a `redis` value is
// (adapterOf). Nothing here imports a client library (relock loads ioredis only when it opens a
// connection itself). Adding a client is one adapter in its own file, listed here.
import { glideAdapter, type GlideClientLike, type GlideClusterLike } from './glide.ts';
import { connectionLabel, connectionPort, ioredisAdapter, type IoredisModule, type RedisClient, type RedisConnectionOptions } from './ioredis.ts';
import { nodeRedisAdapter, type NodeRedisClient, type NodeRedisCluster } from './node-redis.ts';
import type { ClientAdapter, RedisPort } from './port.ts';

export type { GlideClientLike, GlideClusterLike, IoredisModule, NodeRedisClient, NodeRedisCluster, RedisClient, RedisConnectionOptions };

/**
 * A client relock can be given: ioredis (or iovalkey) `Redis`/`Cluster`, node-redis client or
 * Cluster, GLIDE client or Cluster client.
 */
export type AnyRedisClient = RedisClient | NodeRedisClient | NodeRedisCluster | GlideClientLike | GlideClusterLike;

/** Every family, in the order a value is tried (no client of one family fits another's test). */
const ADAPTERS: readonly ClientAdapter<AnyRedisClient>[] = [ioredisAdapter, nodeRedisAdapter, glideAdapter];

/** What `redis` may be, for messages: a URL, ioredis options, or a client of a family. */
export const CLIENTS = `a URL, ioredis options, ${ADAPTERS.map((adapter, i) => (i === ADAPTERS.length - 1 ? `or ${adapter.what}` : adapter.what)).join(', ')}`;

/**
 * The adapter of the family `value` is a client of, or undefined when it is none (a URL or ioredis
 * options, from which relock opens an ioredis connection; or a mistake, which validate.ts refuses).
 */
export function adapterOf(value: unknown): ClientAdapter<AnyRedisClient> | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  return ADAPTERS.find((adapter) => adapter.is(value));
}

/** host:port (or the socket path) a client or options reach, for messages. */
export function addressOf(given: string | AnyRedisClient | RedisConnectionOptions): string {
  const adapter = adapterOf(given);
  return adapter ? adapter.label(given as AnyRedisClient) : connectionLabel(given as string | RedisConnectionOptions);
}

/**
 * The port over a client passed in (left open by close()), or over an ioredis connection relock
 * opens from a URL or options (closed by close()). `onError` hears the errors of the connections
 * relock makes.
 */
export function portOf(given: string | AnyRedisClient | RedisConnectionOptions, onError: (error: Error) => void): RedisPort {
  const adapter = adapterOf(given);
  return adapter ? adapter.port(given as AnyRedisClient, onError) : connectionPort(given as string | RedisConnectionOptions, onError);
}
