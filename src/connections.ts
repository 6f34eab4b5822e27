// The connections relock makes itself: their fail-fast defaults, the options its subscribers need
// whatever the user's say, and how they are opened and closed.
import { Redis, type RedisOptions } from 'ioredis';
import type { RedisClient, RedisConnectionOptions } from './options.ts';

/**
 * Fail-fast defaults of the connections relock makes itself (the user's options win, but for
 * `enableOfflineQueue`: relock's own connections always queue while connecting, so the first
 * acquire need not wait for 'ready'): a command issued while Redis is unreachable fails after two
 * reconnection attempts (about 0.3 s when the port refuses), and no command waits more than 5 s for
 * an answer (a partition, a frozen server), instead of ioredis's 20 retries and no time limit.
 */
export const CONNECTION_DEFAULTS = Object.freeze({
  // No CLIENT SETINFO on connect (ioredis 5.4+): the least-privilege ACL user has no CLIENT, and
  // Redis 7.2+ and Valkey would log each refusal in ACL LOG. A user's own option says otherwise.
  disableClientInfo: true,
  maxRetriesPerRequest: 2,
  connectTimeout: 2_000,
  commandTimeout: 5_000,
  retryStrategy: (times: number) => Math.min(times * 100, 1_000),
}) satisfies RedisOptions;

/**
 * What relock's subscriber needs whatever the user's options say: it connects at the first wait,
 * queues SUBSCRIBE until connected, resubscribes itself and reconnects, and sends no CLIENT
 * command (SUBSCRIBE and its kin are all it runs).
 */
export const SUBSCRIBER_OPTIONS = {
  lazyConnect: true,
  disableClientInfo: true,
  autoResubscribe: false,
  enableOfflineQueue: true,
  maxRetriesPerRequest: CONNECTION_DEFAULTS.maxRetriesPerRequest,
  retryStrategy: CONNECTION_DEFAULTS.retryStrategy,
  commandTimeout: undefined,
} satisfies RedisOptions;

/**
 * A connection for a URL or ioredis options, with relock's defaults under the user's options (and
 * always an offline queue).
 */
export function openConnection(given: string | RedisConnectionOptions): RedisClient {
  const connection = typeof given === 'string' ? new Redis(given, CONNECTION_DEFAULTS) : new Redis({ ...CONNECTION_DEFAULTS, ...given, enableOfflineQueue: true } as never);
  return connection as unknown as RedisClient;
}

/**
 * QUIT lets replies in flight arrive, but waits forever on a Redis that is gone (it sits in the
 * offline queue): only a ready connection gets it, for a second at most.
 */
export async function closeConnection(redis: RedisClient): Promise<void> {
  if (redis.status === 'ready') {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise((resolve) => (timer = setTimeout(resolve, 1_000)));
    await Promise.race([redis.quit().catch(() => undefined), bound]);
    clearTimeout(timer);
  }
  redis.disconnect();
}

/**
 * The subscriber connections of a client of one server or a Cluster, opened with `own` (which
 * reports their errors through the client): on one server, one shared subscriber, a duplicate of
 * `source` with SUBSCRIBER_OPTIONS; on a Cluster, connections to its masters (one per master with
 * waiters for sharded pub/sub, else one to any master), the user's redisOptions (auth, TLS) under
 * relock's, with no reconnection of their own (the subscriber follows the slot to wherever it is
 * served now, or moves to another master).
 */
export function subscriberConnections(source: RedisClient, own: (connection: RedisClient) => RedisClient) {
  return {
    // One server: a duplicate of its connection. (A Cluster subscribes on connections of its own to
    // its masters, connectNode: sharded per master, or one to any master without sharded pub/sub.)
    connectSubscriber: () => own(source.duplicate(SUBSCRIBER_OPTIONS) as RedisClient),
    connectNode: (host: string, port: number) =>
      own(new Redis({ ...source.options?.redisOptions, ...SUBSCRIBER_OPTIONS, lazyConnect: false, retryStrategy: () => null, host, port } as never) as unknown as RedisClient),
  };
}
