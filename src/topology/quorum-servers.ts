// The masters of a Redlock client: the `redis` array checked before any connection is made, each
// server named host:port for error messages.
import type { AnyRedisClient, RedisConnectionOptions } from '../options.ts';
import { adapterOf, addressOf } from '../port/clients.ts';
import { checkRedis } from '../validate.ts';

/** One master as given: a URL, ioredis options, or a client (ioredis family or node-redis), with its host:port. */
export interface RedlockServer {
  readonly given: string | AnyRedisClient | RedisConnectionOptions;
  /** host:port, for messages. */
  readonly label: string;
}

/** The fewest masters of a Redlock client: with 2, one down would stop every lock. */
export const MIN_MASTERS = 3;

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
    if (Array.isArray(entry)) throw new TypeError(`Expected \`redis[${i}]\` to be a URL, ioredis options or a standalone client, got an array`);
    let given: string | AnyRedisClient | RedisConnectionOptions;
    try {
      given = checkRedis(entry);
    } catch (error) {
      const ErrorClass = error instanceof RangeError ? RangeError : TypeError;
      throw new ErrorClass(`In \`redis[${i}]\`: ${(error as Error).message}`);
    }
    if (adapterOf(given)?.cluster(given as AnyRedisClient)) {
      throw new TypeError(`Expected \`redis[${i}]\` to be a standalone Redis server: a Redlock master cannot be a Cluster (use one Cluster, not an array)`);
    }
    return { given, label: addressOf(given) };
  });
  const clients = servers.filter((server) => adapterOf(server.given) !== undefined).length;
  if (clients !== 0 && clients !== servers.length) {
    throw new TypeError(
      `Expected \`redis\` to be all URLs/options or all clients, got ${clients} clients and ${servers.length - clients} URLs/options: mixed servers are refused (relock would close some connections and not others)`,
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
