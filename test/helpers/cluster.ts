// A private Redis Cluster from redis-server processes on free ports: three masters by default, each
// with `replicas` replicas when asked (redis-cli --cluster create --cluster-replicas n).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Cluster, type ClusterOptions } from 'ioredis';
import { LockClient } from '../../src/index.ts';
import type { AnyRedisClient, LockClientOptions } from '../../src/options.ts';
import { clusterFor, type Closable } from './clients.ts';
import { applicableOnly, type It } from './describe.ts';
import { freePort, startPrivateRedis, type RedisServer } from './redis.ts';

export interface ClusterStartOptions {
  /** 1 (without replicas) or 3 and more, as redis-cli creates them. @default 3 */
  readonly masters?: number;
  /** Replicas per master. @default 0 */
  readonly replicas?: number;
  /** cluster-node-timeout: how soon a dead master is failed over. @default 2000 */
  readonly nodeTimeoutMs?: number;
  /** More redis-server arguments for every node. */
  readonly args?: readonly string[];
}

export interface RedisCluster {
  readonly nodes: readonly RedisServer[];
  /** A Cluster client (closed by stop()). */
  connect(options?: ClusterOptions): Cluster;
  /** A Cluster client of the suites' client family for a LockClient (helpers/clients.ts; closed by stop()). */
  client(): AnyRedisClient;
  /** The node serving `slot` as a master now, asked of the nodes themselves. */
  masterOf(slot: number): Promise<RedisServer>;
  /** The replicas of a master, as the master reports them. */
  replicasOf(master: RedisServer): Promise<RedisServer[]>;
  /** The slot of a key (CLUSTER KEYSLOT). */
  slotOf(key: string): Promise<number>;
  /** Until every live node reports cluster_state:ok, agrees on the masters, and each master's replicas are in sync. */
  settled(ms?: number): Promise<void>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startCluster(options: number | ClusterStartOptions = {}): Promise<RedisCluster> {
  const { masters = 3, replicas = 0, nodeTimeoutMs = 2_000, args = [] } = typeof options === 'number' ? { masters: options } : options;
  const nodes: RedisServer[] = [];
  const clients = new Set<Cluster>();
  const others = new Set<Closable>();
  const admin = new Map<RedisServer, ReturnType<RedisServer['connect']>>();
  const adminOf = (node: RedisServer) => {
    let connection = admin.get(node);
    if (!connection) admin.set(node, (connection = node.connect()));
    return connection;
  };
  const alive = async (node: RedisServer) => {
    try {
      return (await Promise.race([adminOf(node).ping(), sleep(300).then(() => 'timeout')])) === 'PONG';
    } catch {
      return false;
    }
  };
  const byPort = (port: number) => nodes.find((node) => node.port === port);

  const cluster: RedisCluster = {
    nodes,
    connect(clusterOptions = {}) {
      const client = new Cluster(
        nodes.map((node) => ({ host: node.host, port: node.port })),
        clusterOptions as never,
      );
      client.on('error', () => undefined);
      clients.add(client);
      return client;
    },
    client() {
      return clusterFor(nodes, others) ?? cluster.connect();
    },
    async masterOf(slot) {
      for (const node of nodes) {
        if (!(await alive(node))) continue;
        const shards = (await adminOf(node).call('CLUSTER', 'SLOTS')) as [number, number, [string, number, string]][];
        for (const [from, to, [, port]] of shards) {
          const owner = byPort(port);
          if (slot >= from && slot <= to && owner) return owner;
        }
      }
      throw new Error(`no node serves slot ${slot}`);
    },
    async replicasOf(master) {
      // Asked of the replicas (a master may list one whose handshake was cut short as port 0).
      const replicas: RedisServer[] = [];
      for (const node of nodes) {
        if (node === master || !(await alive(node))) continue;
        if (new RegExp(`^master_port:${master.port}\\b`, 'm').test(String(await adminOf(node).info('replication')))) replicas.push(node);
      }
      return replicas;
    },
    async slotOf(key) {
      for (const node of nodes) if (await alive(node)) return Number(await adminOf(node).call('CLUSTER', 'KEYSLOT', key));
      throw new Error('no node answers');
    },
    async settled(ms = 20_000) {
      const until = Date.now() + ms;
      for (;;) {
        if (await isSettled()) return;
        if (Date.now() > until) throw new Error('the cluster did not settle');
        await sleep(50);
      }
    },
    async stop() {
      for (const client of clients) client.disconnect();
      for (const client of others) client.disconnect();
      for (const connection of admin.values()) connection.disconnect();
      await Promise.all(nodes.map((node) => node.stop()));
    },
  };

  async function isSettled(): Promise<boolean> {
    const live: RedisServer[] = [];
    for (const node of nodes) if (await alive(node)) live.push(node);
    let view: string | undefined;
    let mastersUp = 0;
    for (const node of live) {
      const connection = adminOf(node);
      if (!/cluster_state:ok/.test(String(await connection.call('CLUSTER', 'INFO')))) return false;
      // Every node must see the same masters and slots (a failover spreads by gossip).
      const slots = JSON.stringify(((await connection.call('CLUSTER', 'SLOTS')) as [number, number, [string, number]][]).map(([from, to, [, port]]) => [from, to, port]).sort());
      if (view !== undefined && slots !== view) return false;
      view = slots;
      const replication = String(await connection.info('replication'));
      if (/role:master/.test(replication)) {
        mastersUp++;
        // Every live node that names this one as its master must be attached and in sync.
        // (Counted, not matched by port: a replica whose handshake was refused half-way reports port 0.)
        const online = [...replication.matchAll(/^slave\d+:ip=[^,]+,port=\d+,state=online/gm)].length;
        if (online < live.filter((other) => replicaOfPort.get(other) === node.port).length) return false;
      } else if (!/master_link_status:up/.test(replication)) {
        return false;
      }
    }
    return mastersUp === masters;
  }

  const replicaOfPort = new Map<RedisServer, number>();

  try {
    for (let i = 0; i < masters * (1 + replicas); i++) {
      const file = `nodes-${await freePort()}.conf`;
      nodes.push(
        await startPrivateRedis({
          args: ['--cluster-enabled', 'yes', '--cluster-config-file', file, '--cluster-node-timeout', String(nodeTimeoutMs), '--appendonly', 'no', '--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0', ...args],
        }),
      );
    }
    if (masters === 1 && replicas === 0) {
      // redis-cli creates clusters of 3 masters or more: one master is given every slot by hand (and
      // its address: a node that met no other does not know its own IP).
      await adminOf(nodes[0]!).call('CONFIG', 'SET', 'cluster-announce-ip', nodes[0]!.host);
      const slots = Array.from({ length: 16_384 }, (_, slot) => slot);
      await adminOf(nodes[0]!).call('CLUSTER', 'ADDSLOTS', ...slots);
    } else {
      await promisify(execFile)('redis-cli', [
        '--cluster', 'create', ...nodes.map((node) => `${node.host}:${node.port}`), '--cluster-replicas', String(replicas), '--cluster-yes',
      ]);
    }
    // Wait until every node agrees the cluster is up and every replica is attached and in sync.
    const until = Date.now() + 30_000;
    for (;;) {
      for (const node of nodes) {
        const info = String(await adminOf(node).info('replication'));
        const port = /master_port:(\d+)/.exec(info)?.[1];
        if (port) replicaOfPort.set(node, Number(port));
      }
      if (replicaOfPort.size === masters * replicas && (await isSettled())) break;
      if (Date.now() > until) throw new Error('the cluster did not come up');
      await sleep(50);
    }
  } catch (error) {
    for (const connection of admin.values()) connection.disconnect();
    await Promise.all(nodes.map((node) => node.stop()));
    throw error;
  }
  // After a failover, a node's master changes: read it again whenever asked.
  const refresh = async () => {
    replicaOfPort.clear();
    for (const node of nodes) {
      if (!(await alive(node))) continue;
      const port = /master_port:(\d+)/.exec(String(await adminOf(node).info('replication')))?.[1];
      if (port) replicaOfPort.set(node, Number(port));
    }
  };
  const settledOnce = cluster.settled;
  return {
    ...cluster,
    async settled(ms) {
      const until = Date.now() + (ms ?? 20_000);
      for (;;) {
        await refresh();
        try {
          return await settledOnce(Math.min(2_000, until - Date.now()));
        } catch (error) {
          if (Date.now() > until) throw error;
        }
      }
    },
  };
}

/** Whether the servers under test have sharded pub/sub (Redis 7 and later, Valkey): not the server matrix's Redis 6.0. */
export const SHARDED_PUBSUB = process.env.RELOCK_SERVER !== 'redis-6.0';

/**
 * `it` for a test of what only sharded pub/sub offers (SSUBSCRIBE per shard, the fair lock on a
 * Cluster): on a server without it the test is listed as not applicable, not run (the fallback is
 * legacy.test.ts's).
 */
export function shardedOnly(it: It): (name: string, body: () => void | Promise<void>, limitMs?: number) => void {
  return applicableOnly(it, SHARDED_PUBSUB, 'sharded pub/sub');
}

type Admin = ReturnType<RedisServer['connect']>;
const admins = new WeakMap<RedisServer, Admin>();

/** One admin connection per node, for the suites (closed by closeAdmins, which clusterSuite calls). */
export function admin(node: RedisServer): Admin {
  let connection = admins.get(node);
  if (!connection) admins.set(node, (connection = node.connect()));
  return connection;
}

/** Closes the admin connections of these nodes. */
export function closeAdmins(nodes: readonly RedisServer[]): void {
  for (const node of nodes) {
    admins.get(node)?.disconnect();
    admins.delete(node);
  }
}

/** Makes a LockClient over the suite's Cluster (closed after the suite). */
export type SuiteClients = (options?: Omit<LockClientOptions, 'redis'>) => LockClient;

/**
 * A suite's Cluster: started before its tests (`started` gets it), stopped after them with the
 * admin connections and every LockClient the returned `client()` made over it (the suite's client
 * family, `defaults` under the options given; their 'error' events ignored: the tests check what
 * they expect).
 */
export function clusterSuite(it: It, options: number | ClusterStartOptions, started: (cluster: RedisCluster) => void, defaults: Omit<LockClientOptions, 'redis'> = {}): SuiteClients {
  let cluster: RedisCluster | undefined;
  const clients: LockClient[] = [];
  it.before(async () => {
    cluster = await startCluster(options);
    started(cluster);
  });
  it.after(async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    if (!cluster) return;
    closeAdmins(cluster.nodes);
    await cluster.stop();
  });
  return (clientOptions = {}) => {
    if (!cluster) throw new Error('clusterSuite: client() before the cluster started');
    const client = new LockClient({ redis: cluster.client(), ...defaults, ...clientOptions });
    client.on('error', () => undefined);
    clients.push(client);
    return client;
  };
}
