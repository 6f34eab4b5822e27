// A private Redis Cluster of three masters, from redis-server processes on free ports.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Cluster } from 'ioredis';
import { freePort, startPrivateRedis, type RedisServer } from './redis.ts';

export interface RedisCluster {
  readonly nodes: readonly RedisServer[];
  connect(): Cluster;
  stop(): Promise<void>;
}

export async function startCluster(masters = 3): Promise<RedisCluster> {
  const nodes: RedisServer[] = [];
  const clients = new Set<Cluster>();
  try {
    for (let i = 0; i < masters; i++) {
      const file = `nodes-${await freePort()}.conf`;
      nodes.push(await startPrivateRedis({ args: ['--cluster-enabled', 'yes', '--cluster-config-file', file, '--cluster-node-timeout', '2000'] }));
    }
    await promisify(execFile)('redis-cli', [
      '--cluster', 'create', ...nodes.map((node) => `${node.host}:${node.port}`), '--cluster-replicas', '0', '--cluster-yes',
    ]);
    // Wait until every node agrees the cluster is up.
    for (const node of nodes) {
      const redis = node.connect();
      for (let i = 0; !/cluster_state:ok/.test(String(await redis.call('CLUSTER', 'INFO'))); i++) {
        if (i > 200) throw new Error('the cluster did not come up');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  } catch (error) {
    await Promise.all(nodes.map((node) => node.stop()));
    throw error;
  }
  return {
    nodes,
    connect() {
      const cluster = new Cluster(nodes.map((node) => ({ host: node.host, port: node.port })));
      cluster.on('error', () => undefined);
      clients.add(cluster);
      return cluster;
    },
    async stop() {
      for (const cluster of clients) cluster.disconnect();
      await Promise.all(nodes.map((node) => node.stop()));
    },
  };
}
