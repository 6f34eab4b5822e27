// The connections relock opens itself, from a URL or ioredis options (and the CLI's, and
// relock/testing's): the ioredis module, loaded only then (a project with node-redis or GLIDE alone
// never loads it), their fail-fast defaults, the settings relock's subscribers need whatever the
// user's say, how they open and close. The ioredis adapter (ioredis.ts) drives them as any client.
import { createRequire } from 'node:module';
import type { Redis, RedisOptions } from 'ioredis';

export type { Redis, RedisOptions };

let loaded: typeof import('ioredis') | undefined;

/**
 * The ioredis module, loaded at the first connection relock opens from a URL or options (and by the
 * CLI and relock/testing). Without it installed: a TypeError naming `redis`, before any I/O.
 */
export function ioredis(): typeof import('ioredis') {
  try {
    loaded ??= createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
  } catch (error) {
    throw new TypeError('Expected `redis` to be a connected client: relock opens connections from a URL or options with ioredis, which is not installed (`npm install ioredis`, or pass a node-redis client; in a bundled app, hand relock the module: `ioredis: Redis`, docs/bundlers.md)', { cause: error });
  }
  return loaded;
}

/**
 * The module a user handed over (LockClientOptions.ioredis: a bundle that carries ioredis): from now
 * on the one relock's connections are made with.
 */
export function useIoredis(module: { readonly Redis: new (...args: any[]) => unknown }): void {
  loaded = module as unknown as typeof import('ioredis');
}

/** Whether ioredis is installed (loadable). */
export function hasIoredis(): boolean {
  try {
    ioredis();
    return true;
  } catch {
    return false;
  }
}

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
export function openConnection(given: string | RedisOptions): Redis {
  const { Redis } = ioredis();
  return typeof given === 'string' ? new Redis(given, CONNECTION_DEFAULTS) : new Redis({ ...CONNECTION_DEFAULTS, ...given, enableOfflineQueue: true } as never);
}

/**
 * QUIT lets replies in flight arrive, but waits forever on a Redis that is gone (it sits in the
 * offline queue): only a ready connection gets it, for a second at most.
 */
export async function closeConnection(redis: { readonly status?: string; quit(): Promise<unknown>; disconnect(): void }): Promise<void> {
  if (redis.status === 'ready') {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise((resolve) => (timer = setTimeout(resolve, 1_000)));
    await Promise.race([redis.quit().catch(() => undefined), bound]);
    clearTimeout(timer);
  }
  redis.disconnect();
}
