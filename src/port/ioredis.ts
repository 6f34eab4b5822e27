// The ioredis adapter of the client port (iovalkey, its fork, fits it too): the shape of a client
// passed in, and the port over it or over a connection relock opened (ioredis-connection.ts, the
// only module that loads a Redis client library).
import type { RedisOptions } from 'ioredis';
import { keySlot } from './slot.ts';
import { closeConnection, hasIoredis, ioredis, openConnection, SUBSCRIBER_OPTIONS } from './ioredis-connection.ts';
import type { ClientAdapter, RedisPort, SubscriberConnection, Topology } from './port.ts';
import { perClient, Readiness, reporting } from './shared.ts';

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
 * ioredis connection options, exactly as `new Redis(options)` takes them, less `keyPrefix` (refused:
 * use `prefix`). Where they leave them unset, relock gives the connections it makes fail-fast
 * defaults (see docs/guarantees.md, "Redis unreachable").
 * ioredis is an optional peer: in a project without it these options are not type-checked (they
 * need ioredis at run time anyway), and relock's declarations still compile there.
 *
 * @example
 * ```ts
 * new LockClient({ redis: { host: 'redis.internal', port: 6380, password: process.env.REDIS_PASSWORD } });
 * ```
 */
export type RedisConnectionOptions = Omit<RedisOptions, 'keyPrefix'> & { readonly keyPrefix?: never };

/**
 * The ioredis module as `import Redis from 'ioredis'` (or `import * as ioredis from 'ioredis'`, or
 * iovalkey's) gives it: relock calls its `Redis` constructor. See {@link LockClientOptions.ioredis}.
 */
export type IoredisModule =
  | Function
  | {
      /** ioredis's `Redis` class. */
      readonly Redis: Function;
    };

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

/** The drops and last error of `redis`, counted once however many LockClients use it. */
export const watchConnection = perClient((redis: RedisClient): ConnectionWatch => {
  const watch: ConnectionWatch = { drops: 0, lastError: undefined, ready: new Readiness() };
  const dropped = () => watch.drops++;
  redis.on('close', dropped);
  redis.on('ready', () => watch.ready.fire());
  if (redis.isCluster === true) watchNodes(redis as unknown as ClusterLike, dropped);
  return watch;
});

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

/** Clients passed in whose errors are recorded (one listener each, however many ports use them). */
const recording = new WeakSet<object>();

/**
 * The port over an ioredis `Redis` or `Cluster`. `onError` hears the errors of the connections this
 * port opens (and of `redis` itself when `owned`: relock made it); `owned` connections are closed
 * by close(), a client passed in never is.
 */
export function ioredisPort(redis: RedisClient, owned: boolean, onError: (error: Error) => void): RedisPort {
  const watch = watchConnection(redis);
  const record = (connection: RedisClient) => (error: Error) => (watchConnection(connection).lastError = error);
  const listen = (connection: RedisClient) => reporting(connection, onError, record(connection));
  if (owned) listen(redis);
  // A client passed in whose errors its owner already listens to: its last error is recorded too (a
  // down master of a Redlock client is named by its refused connection, not by "reconnecting"). One
  // without a listener is left alone: a listener of ours would silence ioredis's unhandled-error warning.
  else if ((redis as unknown as { listenerCount(event: string): number }).listenerCount('error') > 0 && !recording.has(redis)) {
    recording.add(redis);
    (redis as unknown as { on(event: 'error', listener: (error: Error) => void): unknown }).on('error', record(redis));
  }
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

/** host:port (or the socket path) of a URL or ioredis options, for messages. */
export function connectionLabel(given: string | { readonly host?: string | undefined; readonly port?: number | undefined; readonly path?: string | undefined } | undefined): string {
  if (typeof given === 'string') {
    const url = new URL(given);
    return `${url.hostname || '127.0.0.1'}:${url.port || '6379'}`;
  }
  if (given?.path) return given.path;
  return `${given?.host ?? '127.0.0.1'}:${given?.port ?? 6379}`;
}

/** The port over a connection relock opens from a URL or ioredis options: close() closes it. */
export function connectionPort(given: string | RedisConnectionOptions, onError: (error: Error) => void): RedisPort {
  return ioredisPort(openConnection(given) as unknown as RedisClient, true, onError);
}

/** The ioredis family (ioredis 5 and 6, iovalkey): a `Redis` or `Cluster` passed in. */
export const ioredisAdapter: ClientAdapter<RedisClient> = {
  what: 'an ioredis/iovalkey Redis or Cluster',
  is: (value): value is RedisClient => typeof (value as RedisClient).evalsha === 'function' && typeof (value as RedisClient).duplicate === 'function',
  keyPrefix: (client) => client.options?.keyPrefix ?? client.options?.redisOptions?.keyPrefix,
  cluster: (client) => client.isCluster === true,
  label: (client) => connectionLabel(client.options as { host?: string; port?: number; path?: string } | undefined),
  port: (client, onError) => ioredisPort(client, false, onError),
};
