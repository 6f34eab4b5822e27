// Which client family a `redis` value is, and the port over it: the one place that picks an adapter.
// Nothing here imports a client library (ioredis.ts loads ioredis only when relock opens a connection).
import type { AnyRedisClient, GlideClientLike, NodeRedisClient, RedisClient, RedisConnectionOptions } from '../options.ts';
import { glideLabel, glidePort, isGlideClient, isGlideCluster } from './glide.ts';
import { ioredisPort, openConnection } from './ioredis.ts';
import { isNodeRedisClient, isNodeRedisCluster, nodeRedisLabel, nodeRedisPort } from './node-redis.ts';
import type { RedisPort } from './port.ts';

/** An ioredis-family `Redis` or `Cluster` (ioredis 5/6, iovalkey): `evalsha` and `duplicate`. */
export function isIoredisClient(value: unknown): value is RedisClient {
  return typeof value === 'object' && value !== null && typeof (value as RedisClient).evalsha === 'function' && typeof (value as RedisClient).duplicate === 'function';
}

/** Any client relock knows: ioredis family, node-redis client or Cluster, GLIDE client or Cluster client (validate.ts refuses GLIDE before 2.3). */
export function isClient(value: unknown): value is AnyRedisClient {
  return isIoredisClient(value) || (typeof value === 'object' && value !== null && (isNodeRedisClient(value) || isNodeRedisCluster(value) || isGlideClient(value)));
}

/** Whether `value` is a Cluster client of any family. */
export function isClusterClient(value: AnyRedisClient): boolean {
  if (isIoredisClient(value)) return value.isCluster === true;
  return isGlideClient(value) ? isGlideCluster(value) : isNodeRedisCluster(value);
}

/** host:port (or the socket path) a client or options reach, for messages. */
export function addressOf(value: string | AnyRedisClient | RedisConnectionOptions): string {
  if (typeof value === 'string') {
    const url = new URL(value);
    return `${url.hostname || '127.0.0.1'}:${url.port || '6379'}`;
  }
  if (typeof value === 'object' && isGlideClient(value)) return glideLabel(value);
  if (isClient(value) && !isIoredisClient(value)) return nodeRedisLabel(value as NodeRedisClient);
  const options = (isIoredisClient(value) ? value.options : value) as { host?: string; port?: number; path?: string } | undefined;
  if (options?.path) return options.path;
  return `${options?.host ?? '127.0.0.1'}:${options?.port ?? 6379}`;
}

/**
 * The port over a client passed in (left open by close()), or over an ioredis connection relock
 * opens from a URL or options (closed by close()). `onError` hears the errors of the connections
 * relock makes.
 */
export function portOf(given: string | AnyRedisClient | RedisConnectionOptions, onError: (error: Error) => void): RedisPort {
  if (isIoredisClient(given)) return ioredisPort(given, false, onError);
  if (typeof given === 'object' && isGlideClient(given)) return glidePort(given as GlideClientLike, onError);
  if (isClient(given)) return nodeRedisPort(given as NodeRedisClient, onError);
  return ioredisPort(openConnection(given as string | RedisConnectionOptions), true, onError);
}
