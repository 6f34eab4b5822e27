// The ioredis adapter of the client port (iovalkey, its fork, fits it too): the only module that
// loads a Redis client library, and only when relock opens a connection itself (a project with
// node-redis alone never loads it). Also those connections: their fail-fast defaults, the settings
// its subscribers need whatever the user's say, how they open and close.
import { createRequire } from 'node:module';
import type { Redis, RedisOptions } from 'ioredis';
import type { RedisClient, RedisConnectionOptions } from '../options.ts';
import { keySlot } from '../runtime/slot.ts';
import { Readiness, type RedisPort, type SubscriberConnection, type Topology } from './port.ts';

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
function hasIoredis(): boolean {
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
export function openConnection(given: string | RedisConnectionOptions): RedisClient {
  const { Redis } = ioredis();
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
 * What relock knows of a connection, shared by every LockClient on it: one 'close' listener per
 * connection, however many clients use it (no MaxListenersExceededWarning with 50 of them).
 */
export interface ConnectionWatch {
  drops: number;
  lastError: Error | undefined;
  /** Its 'ready' events. */
  readonly ready: Readiness;
}

const watches = new WeakMap<object, ConnectionWatch>();

/** The drops and last error of `redis`, counted once however many LockClients use it. */
export function watchConnection(redis: RedisClient): ConnectionWatch {
  let watch = watches.get(redis);
  if (!watch) {
    const created: ConnectionWatch = { drops: 0, lastError: undefined, ready: new Readiness() };
    const dropped = () => created.drops++;
    redis.on('close', dropped);
    redis.on('ready', () => created.ready.fire());
    if (redis.isCluster === true) watchNodes(redis as unknown as ClusterLike, dropped);
    watches.set(redis, (watch = created));
  }
  return watch;
}

/** What relock reads of an ioredis Cluster (ioredis 5 and 6 both have it). */
interface ClusterLike {
  readonly slots?: readonly (readonly string[] | undefined)[];
  /** The address a node is reached at, through the Cluster's natMap. */
  natMapper?(key: string): { readonly host: string; readonly port: number };
  refreshSlotsCache?(callback: (error?: Error | null) => void): void;
  nodes(role: 'all' | 'master'): NodeLike[];
  on(event: '+node', listener: (node: NodeLike) => void): unknown;
  on(event: 'refresh', listener: () => void): unknown;
  off(event: 'refresh', listener: () => void): unknown;
}

interface NodeLike extends Connection {
  readonly options: { readonly host?: string; readonly port?: number; commandTimeout?: number };
  duplicate(options: object): unknown;
  on(event: 'close', listener: () => void): unknown;
}

/** One ioredis connection (a `Redis`): its options, read by each command as it is sent. */
interface Connection {
  readonly options: { commandTimeout?: number };
  wait(replicas: number, timeoutMs: number): Promise<number>;
}

/**
 * `WAIT` with the deadline it asks for: on a connection with a `commandTimeout` (5 s on relock's
 * own), the server answers a `WAIT` only after up to `timeoutMs`, so it gets that much more. ioredis
 * reads `commandTimeout` when the command is issued, synchronously, and has no per-command timeout
 * in its API: the option is lengthened for that one call and put back at once.
 */
function waited(connection: Connection, replicas: number, timeoutMs: number): Promise<number> {
  const { options } = connection;
  const answerMs = options.commandTimeout;
  if (typeof answerMs !== 'number') return connection.wait(replicas, timeoutMs).then(Number);
  options.commandTimeout = timeoutMs + answerMs;
  try {
    return connection.wait(replicas, timeoutMs).then(Number);
  } finally {
    options.commandTimeout = answerMs;
  }
}

/**
 * A Cluster resends a command whose node connection closed (after `retryDelayOnFailover`) with no
 * 'close' of its own: every close of a node connection counts as a drop.
 */
function watchNodes(cluster: ClusterLike, dropped: () => void): void {
  const seen = new WeakSet<object>();
  const watch = (node: NodeLike) => {
    if (seen.has(node)) return;
    seen.add(node);
    node.on('close', dropped);
  };
  for (const node of cluster.nodes('all')) watch(node);
  cluster.on('+node', watch);
}

/**
 * The topology of an ioredis Cluster, from its slot cache. The cache holds NAT-mapped addresses but
 * for the slots of a MOVED reply, which ioredis writes there as Redis sent them (redis/ioredis#1582):
 * each address goes through the natMap again (a mapped one is no key of it and stays as it is).
 */
export function clusterTopology(cluster: unknown): Topology {
  const c = cluster as ClusterLike;
  const reached = (node: string | undefined) => {
    if (node === undefined || typeof c.natMapper !== 'function') return node;
    const { host, port } = c.natMapper(node);
    return `${host}:${port}`;
  };
  return {
    owner: (slot) => reached(c.slots?.[slot]?.[0]),
    refresh: () =>
      new Promise<void>((resolve) => {
        if (typeof c.refreshSlotsCache !== 'function') return resolve();
        c.refreshSlotsCache(() => resolve());
      }),
    watch: (listener) => {
      c.on('refresh', listener);
      return () => void c.off('refresh', listener);
    },
    masters: () =>
      c.nodes('master').flatMap(({ options: { host, port } }) => (host === undefined || port === undefined ? [] : [{ host, port }])),
  };
}

/**
 * The port over an ioredis `Redis` or `Cluster`. `onError` hears the errors of the connections this
 * port opens (and of `redis` itself when `owned`: relock made it); `owned` connections are closed
 * by close(), a client passed in never is.
 */
export function ioredisPort(redis: RedisClient, owned: boolean, onError: (error: Error) => void): RedisPort {
  const watch = watchConnection(redis);
  const listen = <C extends RedisClient>(connection: C): C => {
    connection.on('error', (error: Error) => {
      watchConnection(connection).lastError = error;
      onError(error);
    });
    return connection;
  };
  if (owned) listen(redis);
  const cluster = redis.isCluster === true;
  const c = redis as unknown as ClusterLike;
  const topology = cluster ? clusterTopology(redis) : undefined;
  const commands = redis as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  return {
    cluster,
    routesPubSub: false,
    get status() {
      return redis.status ?? 'ready';
    },
    get drops() {
      return watch.drops;
    },
    get lastError() {
      return watch.lastError;
    },
    onReady: (listener) => watch.ready.add(listener),
    topology,
    evalsha: (sha1, keys, args) => redis.evalsha(sha1, keys.length, ...keys, ...args),
    eval: (source, keys, args) => redis.eval(source, keys.length, ...keys, ...args),
    command(name, args, routedByKey) {
      const method = commands[name.toLowerCase()];
      // A Cluster routes a named command by its key; `call` sends anything else to any node.
      if (routedByKey && typeof method === 'function') return method.apply(redis, [...args]);
      return (redis as unknown as { call(...a: (string | number)[]): Promise<unknown> }).call(name, ...args);
    },
    async waitReplicas(key, replicas, timeoutMs) {
      if (!topology) return waited(redis as unknown as Connection, replicas, timeoutMs);
      // The master as the subscriber finds it: through the natMap, as the Cluster's node connections are keyed.
      const node = topology.owner(keySlot(key));
      const master = c.nodes('master').find((n) => `${n.options.host}:${n.options.port}` === node);
      if (!master) throw new Error(`no connection to the master of "${key}" (slot ${keySlot(key)}${node ? `, ${node}` : ''})`);
      return waited(master, replicas, timeoutMs);
    },
    // One server: a duplicate of its connection. (A Cluster subscribes on connections of its own to
    // its masters, openNode: sharded per master, or one to any master without sharded pub/sub.)
    openSubscriber: () => listen(redis.duplicate(SUBSCRIBER_OPTIONS) as RedisClient) as unknown as SubscriberConnection,
    // An ioredis connection with the Cluster's redisOptions: ioredis reports the server's unsolicited
    // SUNSUBSCRIBE of a migrated slot as 'moved' (iovalkey 0.4 does not). Without ioredis installed,
    // a duplicate of one of the Cluster's own node connections (iovalkey's).
    openNode: (host, port) => {
      const options = { ...redis.options?.redisOptions, ...SUBSCRIBER_OPTIONS, lazyConnect: false, retryStrategy: () => null, host, port };
      const node = c.nodes('all')[0];
      const connection = node && !hasIoredis() ? node.duplicate(options) : new (ioredis().Redis)(options as never);
      return listen(connection as unknown as RedisClient) as unknown as SubscriberConnection;
    },
    close: () => (owned ? closeConnection(redis) : Promise.resolve()),
  };
}
