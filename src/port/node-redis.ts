// The node-redis adapter of the client port: createClient() and createCluster() of node-redis 5 and
// 6, RESP2 or RESP3. It imports nothing from node-redis: it drives the client it is given. Two ways
// node-redis differs from ioredis shape it: a command out when its connection closed fails and is
// never resent (so a drop never runs a script twice), and a command has no answer deadline (so the
// adapter gives each one its own, as relock's ioredis connections have `commandTimeout`, and `WAIT` its
// own timeout more).
import { Deadlines, NodeRedisSubscriber, within, type Client } from './node-redis-connection.ts';
import type { ClientAdapter, RedisPort, Topology } from './port.ts';
import { perClient, Readiness, reporting, scriptArgs, slotMapTopology, strings, waitArgs } from './shared.ts';

/**
 * A node-redis 5 or 6 client (`createClient()`, RESP2 or RESP3), connected before relock uses it:
 * relock sends its scripts through `sendCommand`, duplicates it once for its subscriber (without
 * reconnection limits of the user's), and never opens, closes or listens for `'error'` on it.
 *
 * @example
 * ```ts
 * const redis = await createClient({ url: process.env.REDIS_URL }).connect(); // yours: close it yourself
 * const client = new LockClient({ redis });
 * ```
 */
export interface NodeRedisClient {
  /** True from `connect()` until the client is closed: relock sends nothing on a client that is not open. */
  readonly isOpen: boolean;
  /** True while connected: relock tells a client still connecting from one that lost its server. */
  readonly isReady: boolean;
  /** How relock sends its scripts and reads. */
  sendCommand(...args: any[]): Promise<unknown>;
  /** How relock makes its subscriber connection. */
  duplicate(...args: any[]): unknown;
}

/**
 * A node-redis 5 or 6 Cluster (`createCluster()`), connected before relock uses it: scripts go
 * through `sendCommand` by their key's slot; relock subscribes on connections of its own to the
 * masters, made from the Cluster's clients for them (sharded pub/sub on Redis 7 and later).
 *
 * @example
 * ```ts
 * const redis = await createCluster({ rootNodes: [{ url: 'redis://10.0.0.1:7000' }] }).connect();
 * const client = new LockClient({ redis });
 * ```
 */
export interface NodeRedisCluster {
  /** True from `connect()` until the Cluster is closed: relock sends nothing on one that is not open. */
  readonly isOpen: boolean;
  /** The masters of the slot map: where relock opens its shard subscribers. */
  readonly masters: readonly unknown[];
  /** How relock sends its scripts and reads, routed by their key's slot. */
  sendCommand(...args: any[]): Promise<unknown>;
  /** The Cluster's client for one node: relock duplicates it for a shard subscriber. */
  nodeClient(...args: any[]): unknown;
}

/** How long a command may go unanswered once sent, as relock's own ioredis connections allow. */
const ANSWER_MS = 5_000;
/** How long a command may wait for a connection that is down (node-redis queues it meanwhile). */
const OFFLINE_MS = 1_000;
/** Replies as RESP2 gives them whatever the client's RESP and type mapping: maps as flat arrays, strings as strings. */
const TYPE_MAPPING = Object.freeze({ 37: Array });

interface ClusterNode {
  readonly host: string;
  readonly port: number;
}

/** What relock calls on a node-redis Cluster (RedisClusterType). */
interface Cluster {
  readonly isOpen: boolean;
  /** node-redis 6: the slot map is read (node-redis 5 has no such property). */
  readonly isReady?: boolean;
  readonly masters: readonly ClusterNode[];
  readonly slots: readonly ({ readonly master: ClusterNode } | undefined)[];
  sendCommand(firstKey: string | undefined, isReadonly: boolean, args: string[], options?: object): Promise<unknown>;
  nodeClient(node: ClusterNode): Client | Promise<Client>;
  once(event: 'connect', listener: () => void): unknown;
  /** node-redis's slot cache: the only way to ask the cluster for its map again (internal, in node-redis 5 and 6). */
  readonly _slots?: { rediscover?(startWith: Client): Promise<void> };
}

/** A node-redis client (createClient): it has `isOpen` and a `sendCommand(args)`, and no `masters`. */
function isNodeRedisClient(value: object): value is NodeRedisClient {
  return typeof (value as { sendCommand?: unknown }).sendCommand === 'function' && 'isOpen' in value && !('masters' in value);
}

/** A node-redis Cluster (createCluster): `sendCommand`, `masters` and `nodeClient`. */
function isNodeRedisCluster(value: object): value is NodeRedisCluster {
  return typeof (value as { sendCommand?: unknown }).sendCommand === 'function' && 'masters' in value && typeof (value as { nodeClient?: unknown }).nodeClient === 'function';
}

/** What a node-redis client passed in is connected to, for messages: its socket's host:port, or its URL. */
function nodeRedisLabel(value: NodeRedisClient | NodeRedisCluster): string {
  const options = (value as unknown as Client).options as { socket?: { host?: string; port?: number; path?: string }; url?: string } | undefined;
  if (options?.socket?.path) return options.socket.path;
  if (options?.socket?.host !== undefined || options?.socket?.port !== undefined) return `${options.socket.host ?? 'localhost'}:${options.socket.port ?? 6379}`;
  if (options?.url) {
    const url = new URL(options.url);
    return `${url.hostname || 'localhost'}:${url.port || '6379'}`;
  }
  return 'localhost:6379';
}

/** What the port knows of a client passed in, shared by every LockClient over it (one set of listeners). */
interface Watch {
  /** Connected once and dropped since, until 'ready' again. */
  dropped: boolean;
  /** The last connection failure of a command relock sent. */
  lastError: Error | undefined;
  /** The answer deadlines of the commands relock sent on it. */
  readonly deadlines: Deadlines;
  /** Its 'ready' events (a client; a Cluster's nodes say nothing relock hears). */
  readonly ready: Readiness;
  /** Records a command's failure (a connection failure as `lastError`). */
  readonly failed: (error: unknown) => void;
}

/**
 * The watch of a client passed in: 'reconnecting' and 'ready' heard once however many LockClients
 * use it (never 'error'; a Cluster's nodes say nothing relock hears).
 */
const watchOf = perClient((given: NodeRedisClient | NodeRedisCluster): Watch => {
  const watch: Watch = {
    dropped: false,
    lastError: undefined,
    deadlines: new Deadlines(ANSWER_MS),
    ready: new Readiness(),
    failed: (error) => {
      if (error instanceof Error && error.name !== 'ReplyError') watch.lastError = error;
    },
  };
  if (!isNodeRedisCluster(given)) {
    const client = given as unknown as Client;
    client.on('reconnecting', () => (watch.dropped = true));
    client.on('ready', () => {
      watch.dropped = false;
      watch.ready.fire();
    });
  }
  return watch;
});

/** Replies as RESP2 gives them, sent at once by a connected client. */
const READY = Object.freeze({ typeMapping: TYPE_MAPPING });
/** ... or dropped by node-redis when not sent within OFFLINE_MS (the client is down). */
const OFFLINE = Object.freeze({ typeMapping: TYPE_MAPPING, timeout: OFFLINE_MS });

/**
 * One command with relock's deadlines: `OFFLINE_MS` to be sent when the connection is down
 * (node-redis drops a command it has not sent by then), `ANSWER_MS` to be answered.
 */
function sent(ready: boolean, send: (options: object) => Promise<unknown>, what: string, watch: Watch): Promise<unknown> {
  return watch.deadlines.track(send(ready ? READY : OFFLINE), what, watch.failed);
}

/**
 * `WAIT` with the deadline it asks for: the server answers it after up to `timeoutMs`, so it gets
 * `timeoutMs` more than the `ANSWER_MS` every other command gets.
 */
function waited(ready: boolean, send: (options: object) => Promise<unknown>, timeoutMs: number, watch: Watch): Promise<number> {
  return within(send(ready ? READY : OFFLINE), timeoutMs + ANSWER_MS, 'WAIT', watch.failed).then(Number);
}

/** The message for a client passed in that is not open: relock neither opens nor closes a client it is given. */
const NOT_OPEN = 'the node-redis client is not open: connect() it before relock uses it (relock never opens or closes a client passed in)';

/**
 * The port over a node-redis client or Cluster passed in (relock never opens, closes or listens for
 * 'error' on it). `onError` hears the errors of the subscriber connections the port opens.
 */
function nodeRedisPort(given: NodeRedisClient | NodeRedisCluster, onError: (error: Error) => void): RedisPort {
  const cluster = isNodeRedisCluster(given);
  const watch = watchOf(given);
  const listen = (connection: NodeRedisSubscriber) => reporting(connection, onError, (error) => (watch.lastError = error));
  const notOpen = () => Promise.reject(new Error(NOT_OPEN));
  const common = {
    // node-redis fails what was out when a connection closed and never resends it.
    drops: 0,
    routesPubSub: false,
    onReady: (listener: () => void) => watch.ready.add(listener),
    close: () => Promise.resolve(),
  };
  if (cluster) return clusterPort(given as unknown as Cluster, watch, listen, notOpen, common);
  const client = given as unknown as Client;
  const run = (args: string[]) => (client.isOpen ? sent(client.isReady, (options) => client.sendCommand(args, options), args[0]!, watch) : notOpen());
  const wait = (replicas: number, timeoutMs: number) =>
    client.isOpen ? waited(client.isReady, (options) => client.sendCommand(waitArgs(replicas, timeoutMs), options), timeoutMs, watch) : notOpen();
  return {
    ...common,
    // A getter on the port itself: spreading one from `common` would copy its first value.
    get lastError() {
      return watch.lastError;
    },
    cluster: false,
    get status() {
      return client.isReady ? 'ready' : !client.isOpen ? 'end' : watch.dropped ? 'reconnecting' : 'connecting';
    },
    topology: undefined,
    evalsha: (sha1, keys, args) => run(scriptArgs('EVALSHA', sha1, keys, args)),
    eval: (source, keys, args) => run(scriptArgs('EVAL', source, keys, args)),
    command: (name, args) => run([name, ...strings(args)]),
    waitReplicas: (_key, replicas, timeoutMs) => wait(replicas, timeoutMs),
    openSubscriber: () => listen(new NodeRedisSubscriber(() => subscriberOf(client, true), false)),
    openNode: () => {
      throw new Error('one server subscribes through openSubscriber()');
    },
  };
}

/** The port over a node-redis Cluster: commands routed by their key's slot, a subscriber per master. */
function clusterPort(
  cluster: Cluster,
  watch: Watch,
  listen: (connection: NodeRedisSubscriber) => NodeRedisSubscriber,
  notOpen: () => Promise<never>,
  common: Pick<RedisPort, 'drops' | 'routesPubSub' | 'onReady' | 'close'>,
): RedisPort {
  const send = (key: string | undefined, args: string[]) => sent(true, (options) => cluster.sendCommand(key, false, args, options), args[0]!, watch);
  // A Cluster whose connect() is still reading the slot map has no node to send to yet (node-redis 5
  // fails such a command with a TypeError, 6 with ClientOfflineError): its commands wait for the
  // map (its 'connect'), at most OFFLINE_MS.
  let discovery: Promise<void> | undefined;
  const discovered = () =>
    (discovery ??= within(new Promise<void>((resolve) => cluster.once('connect', () => resolve())), OFFLINE_MS, "the Cluster's slot map").finally(() => (discovery = undefined)));
  // node-redis 6 says when the map is read (isReady); node-redis 5 only fills in its masters.
  const mapped = () => (cluster.isReady ?? cluster.masters.length > 0);
  const ready = <T>(go: () => Promise<T>): Promise<T> => {
    if (!cluster.isOpen) return notOpen();
    if (!mapped()) return discovered().then(go);
    return go();
  };
  const run = (key: string | undefined, args: string[]) => ready(() => send(key, args));
  return {
    ...common,
    get lastError() {
      return watch.lastError;
    },
    cluster: true,
    get status() {
      return cluster.isOpen ? 'ready' : 'end';
    },
    topology: clusterTopology(cluster),
    evalsha: (sha1, keys, args) => run(keys[0], scriptArgs('EVALSHA', sha1, keys, args)),
    eval: (source, keys, args) => run(keys[0], scriptArgs('EVAL', source, keys, args)),
    command: (name, args, routedByKey) => run(routedByKey ? String(args[0]) : undefined, [name, ...strings(args)]),
    waitReplicas: (key, replicas, timeoutMs) =>
      ready(() => waited(true, (options) => cluster.sendCommand(key, false, waitArgs(replicas, timeoutMs), options), timeoutMs, watch)),
    openSubscriber: () => {
      throw new Error('a Cluster subscribes through openNode()');
    },
    // A subscriber of one master, made from the Cluster's own client for it (its address map, TLS,
    // credentials and RESP), which does not reconnect by itself: the shard transport replaces it.
    openNode: (host, port) =>
      listen(
        new NodeRedisSubscriber(async () => {
          const node = cluster.masters.find((master) => master.host === host && master.port === port);
          if (!node) throw new Error(`no master ${host}:${port} in the cluster's map`);
          return subscriberOf(await cluster.nodeClient(node), false);
        }, true),
      ),
  };
}

/**
 * A duplicate of `client` with what relock's subscriber needs whatever the user's options say: no
 * CLIENT SETINFO (SUBSCRIBE and its kin are all it runs), and either reconnection with a short
 * backoff (one server) or none (a Cluster's shard: relock replaces it).
 */
function subscriberOf(client: Client, reconnect: boolean): Client {
  const socket = { ...client.options?.socket, reconnectStrategy: reconnect ? (retries: number) => Math.min((retries + 1) * 100, 1_000) : false };
  return client.duplicate({ socket, disableClientInfo: true, disableOfflineQueue: false });
}

/** The topology of a node-redis Cluster, from its slot map (addresses as the servers announce them). */
function clusterTopology(cluster: Cluster): Topology {
  return slotMapTopology({
    owner: (slot) => {
      const master = cluster.slots[slot]?.master;
      return master ? `${master.host}:${master.port}` : undefined;
    },
    masters: () => cluster.masters.map(({ host, port }) => ({ host, port })),
    async read() {
      const first = cluster.masters[0];
      if (first && typeof cluster._slots?.rediscover === 'function') await cluster._slots.rediscover(await cluster.nodeClient(first));
    },
  });
}

/** The node-redis family (node-redis 5 and 6, RESP2 or RESP3): a client or a Cluster passed in, connected. */
export const nodeRedisAdapter: ClientAdapter<NodeRedisClient | NodeRedisCluster> = {
  what: 'a node-redis client or Cluster',
  is: (value): value is NodeRedisClient | NodeRedisCluster => isNodeRedisClient(value) || isNodeRedisCluster(value),
  cluster: isNodeRedisCluster,
  label: nodeRedisLabel,
  port: nodeRedisPort,
};
