// What a suite's LockClients run on, one of three topologies: one server, a Redis Cluster of 3 masters
// (helpers/cluster.ts), or the 3 masters of a Redlock client. A suite sees the same surface on each:
// a plain admin connection per node (script calls summed over them, connections killed on each),
// the node that serves a key, what a LockClient of the suites' client family gets as `redis`, and
// plain ioredis connections as an application would pass them in.
import { Cluster, Redis } from 'ioredis';
import type { AnyRedisClient } from '../../src/options.ts';
import { clusterFor, redisFor, type Closable } from './clients.ts';
import { startCluster, type RedisCluster } from './cluster.ts';
import { startRedis, type RedisServer, type StartOptions } from './redis.ts';

export type Topology = 'server' | 'cluster' | 'redlock';

/** ioredis connections passed in: one Redis (one server), one Cluster, or one Redis per master (Redlock). */
export type PassedIn = Redis | Cluster | Redis[];

export interface Deployment {
  readonly topology: Topology;
  /** The server; every node of the Cluster; every master of the Redlock client. */
  readonly nodes: readonly RedisServer[];
  /** A plain connection per node (the same order as `nodes`), for inspecting, counting and killing connections. */
  readonly admins: readonly Redis[];
  /** The Cluster, on that topology. */
  readonly cluster?: RedisCluster;
  /** The admin connection of the node that serves `key` (a Cluster: the master of its slot). A Redlock client keeps a copy on every master: refused there. */
  adminOf(key: string): Promise<Redis>;
  /** What a LockClient of the suites' client family (helpers/clients.ts) gets as `redis`; what it opens is added to `connections`. */
  redis(connections: Set<Closable>): string | AnyRedisClient | (string | AnyRedisClient)[];
  /** New ioredis connections to the deployment, as an application passes them in (the caller closes them with `disconnect`). */
  connect(options?: { lazyConnect?: boolean }): PassedIn;
  stop(): Promise<void>;
}

/** Closes connections given by Deployment#connect. */
export function disconnect(connections: PassedIn): void {
  for (const connection of Array.isArray(connections) ? connections : [connections]) connection.disconnect();
}

/** Each connection of `connections`, for a test that looks at them one by one. */
export const each = (connections: PassedIn): (Redis | Cluster)[] => (Array.isArray(connections) ? connections : [connections]);

const quiet = <C extends Redis | Cluster>(connection: C): C => {
  connection.on('error', () => undefined);
  return connection;
};

/** Starts a deployment: one server (`start`: its options), a Cluster of 3 masters, or 3 private masters for a Redlock client. */
export async function startDeployment(topology: Topology, start: StartOptions = {}): Promise<Deployment> {
  if (topology === 'cluster') return onCluster(await startCluster());
  const servers = topology === 'server' ? [await startRedis(start)] : await Promise.all([0, 1, 2].map(() => startRedis({ ...start, private: true })));
  const admins = servers.map((server) => server.connect());
  return {
    topology,
    nodes: servers,
    admins,
    async adminOf() {
      if (topology === 'redlock') throw new Error('a Redlock client keeps a copy of every key on every master: look on each (admins)');
      return admins[0]!;
    },
    redis(connections) {
      return topology === 'server' ? redisFor(servers[0]!.url, connections) : servers.map((server) => redisFor(server.url, connections, true));
    },
    connect({ lazyConnect = false } = {}) {
      const connections = servers.map((server) => quiet(lazyConnect ? new Redis({ host: server.host, port: server.port, lazyConnect: true }) : new Redis(server.url)));
      return topology === 'server' ? connections[0]! : connections;
    },
    async stop() {
      for (const admin of admins) admin.disconnect();
      await Promise.all(servers.map((server) => server.stop()));
    },
  };
}

function onCluster(cluster: RedisCluster): Deployment {
  const admins = cluster.nodes.map((node) => node.connect());
  const addresses = () => cluster.nodes.map((node) => ({ host: node.host, port: node.port }));
  return {
    topology: 'cluster',
    nodes: cluster.nodes,
    admins,
    cluster,
    async adminOf(key) {
      const master = await cluster.masterOf(await cluster.slotOf(key));
      return admins[cluster.nodes.indexOf(master)]!;
    },
    redis(connections) {
      const client = clusterFor(cluster.nodes, connections);
      if (client) return client;
      const made = quiet(new Cluster(addresses()));
      connections.add(made);
      return made;
    },
    connect({ lazyConnect = false } = {}) {
      return quiet(new Cluster(addresses(), { lazyConnect }));
    },
    async stop() {
      for (const admin of admins) admin.disconnect();
      await cluster.stop();
    },
  };
}

/**
 * One deployment lent to `users` suites in turn (the suites of a file run one after another): started
 * when the first asks for it, stopped when the last one's stop() is called.
 */
export function shared(start: () => Promise<Deployment>, users: number): () => Promise<Deployment> {
  let started: Promise<Deployment> | undefined;
  let left = users;
  return async () => {
    started ??= start();
    const deployment = await started;
    return {
      ...deployment,
      async stop() {
        if (--left === 0) await deployment.stop();
      },
    };
  };
}
