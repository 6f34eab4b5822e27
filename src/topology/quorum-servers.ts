// The masters of a Redlock client: the `redis` array checked before any connection is made, each
// server named host:port for error messages.
import type { RedisClient, RedisConnectionOptions } from '../options.ts';
import { checkRedis, isRedisClient } from '../validate.ts';

/** One master as given: a URL, ioredis options, or an ioredis client, with its host:port. */
export interface RedlockServer {
  readonly given: string | RedisClient | RedisConnectionOptions;
  /** host:port, for messages. */
  readonly label: string;
}

/** The fewest masters of a Redlock client: with 2, one down would stop every lock. */
export const MIN_MASTERS = 3;

function labelOf(value: string | RedisClient | RedisConnectionOptions): string {
  if (typeof value === 'string') {
    const url = new URL(value);
    return `${url.hostname || '127.0.0.1'}:${url.port || '6379'}`;
  }
  const options = (isRedisClient(value) ? value.options : value) as { host?: string; port?: number; path?: string } | undefined;
  if (options?.path) return options.path;
  return `${options?.host ?? '127.0.0.1'}:${options?.port ?? 6379}`;
}

/**
 * Checks the `redis` array of a Redlock client: at least 3 independent servers, all URLs/options or
 * all clients (relock closes the connections it made and never those passed in; a mix would make
 * `close()` half-own the quorum), no Cluster, no server twice.
 */
export function checkServers(value: readonly unknown[]): RedlockServer[] {
  if (value.length < MIN_MASTERS) {
    throw new RangeError(
      `Expected \`redis\` to be one server or an array of at least ${MIN_MASTERS} independent Redis servers (Redlock), got an array of ${value.length}`,
    );
  }
  const servers = value.map((entry, i) => {
    if (Array.isArray(entry)) throw new TypeError(`Expected \`redis[${i}]\` to be a URL, ioredis options or an ioredis Redis instance, got an array`);
    let given: string | RedisClient | RedisConnectionOptions;
    try {
      given = checkRedis(entry);
    } catch (error) {
      const ErrorClass = error instanceof RangeError ? RangeError : TypeError;
      throw new ErrorClass(`In \`redis[${i}]\`: ${(error as Error).message}`);
    }
    if (isRedisClient(given) && given.isCluster === true) {
      throw new TypeError(`Expected \`redis[${i}]\` to be a standalone Redis server: a Redlock master cannot be a Cluster (use one Cluster, not an array)`);
    }
    return { given, label: labelOf(given) };
  });
  const clients = servers.filter((server) => isRedisClient(server.given)).length;
  if (clients !== 0 && clients !== servers.length) {
    throw new TypeError(
      `Expected \`redis\` to be all URLs/options or all ioredis clients, got ${clients} clients and ${servers.length - clients} URLs/options: mixed servers are refused (relock would close some connections and not others)`,
    );
  }
  const seen = new Map<unknown, number>();
  servers.forEach((server, i) => {
    for (const key of [server.label, server.given]) {
      const before = seen.get(key);
      if (before !== undefined) {
        throw new TypeError(`Expected \`redis\` to list independent servers, got ${server.label} twice (redis[${before}] and redis[${i}]): a quorum of copies is no quorum`);
      }
    }
    seen.set(server.label, i);
    seen.set(server.given, i);
  });
  return servers;
}
