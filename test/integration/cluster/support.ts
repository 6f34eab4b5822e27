// What the cluster suites do to a cluster: inspect pub/sub per node, move one slot, pause a node.
import { admin, type RedisCluster } from '../../helpers/cluster.ts';
import type { RedisServer } from '../../helpers/redis.ts';

export { admin, closeAdmins } from '../../helpers/cluster.ts';

/** Subscribers of a shard channel on one node (PUBSUB SHARDNUMSUB). */
export async function shardSubscribers(node: RedisServer, channel: string): Promise<number> {
  const reply = (await admin(node).call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number];
  return Number(reply[1]);
}

/** Plain (non-sharded) subscriptions on one node: channels, and connections subscribed to any. */
export async function plainSubscriptions(node: RedisServer): Promise<{ channels: number; connections: number }> {
  const channels = ((await admin(node).call('PUBSUB', 'CHANNELS')) as string[]).length;
  const list = String(await admin(node).call('CLIENT', 'LIST'));
  const connections = [...list.matchAll(/ sub=(\d+) psub=(\d+)/g)].filter((match) => Number(match[1]) + Number(match[2]) > 0).length;
  return { channels, connections };
}

/** Connections of this node that hold shard subscriptions (CLIENT LIST ssub=). */
export async function shardConnections(node: RedisServer): Promise<number> {
  const list = String(await admin(node).call('CLIENT', 'LIST'));
  return [...list.matchAll(/ ssub=(\d+)/g)].filter((match) => Number(match[1]) > 0).length;
}

/** How often a command ran on a node (INFO commandstats). */
export async function calls(node: RedisServer, command: string): Promise<number> {
  const stats = String(await admin(node).info('commandstats'));
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
}

export async function nodeId(node: RedisServer): Promise<string> {
  return String(await admin(node).call('CLUSTER', 'MYID'));
}

/** Moves one slot, with its keys, from its master to another master (what redis-cli --cluster reshard does per slot). */
export async function moveSlot(cluster: RedisCluster, slot: number, to: RedisServer): Promise<void> {
  const from = await cluster.masterOf(slot);
  const [fromId, toId] = await Promise.all([nodeId(from), nodeId(to)]);
  await admin(to).call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', fromId);
  await admin(from).call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', toId);
  for (;;) {
    const keys = (await admin(from).call('CLUSTER', 'GETKEYSINSLOT', slot, 100)) as string[];
    if (keys.length === 0) break;
    await admin(from).call('MIGRATE', to.host, to.port, '', 0, 5_000, 'KEYS', ...keys);
  }
  // The new owner first, then the old one (which then unsubscribes its shard channels of the slot).
  await admin(to).call('CLUSTER', 'SETSLOT', slot, 'NODE', toId);
  await admin(from).call('CLUSTER', 'SETSLOT', slot, 'NODE', toId);
  for (const node of cluster.nodes) {
    if (node === to || node === from) continue;
    await admin(node).call('CLUSTER', 'SETSLOT', slot, 'NODE', toId).catch(() => undefined);
  }
}

/**
 * Promotes a replica to master of its shard by CLUSTER FAILOVER (coordinated with its master: no
 * write is lost); when that manual failover has not happened within 6 s (Redis gives it 5 s, then
 * gives up silently), by CLUSTER FAILOVER TAKEOVER, which may lose the last writes. Measured beside
 * two CPU burners: 9 of 27 coordinated failovers took longer than 3 s.
 */
export async function promote(replica: RedisServer): Promise<void> {
  const promoted = async () => /role:master/.test(await admin(replica).info('replication'));
  for (const [mode, waitMs] of [[[], 6_000], [['TAKEOVER'], 3_000]] as const) {
    await admin(replica).call('CLUSTER', 'FAILOVER', ...mode);
    const until = Date.now() + waitMs;
    while (Date.now() < until) {
      if (await promoted()) return;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
  throw new Error(`replica ${replica.port} was not promoted`);
}

/** Another master than `node`. */
export async function otherMaster(cluster: RedisCluster, node: RedisServer): Promise<RedisServer> {
  for (const candidate of cluster.nodes) {
    if (candidate === node) continue;
    if (/role:master/.test(String(await admin(candidate).info('replication')))) return candidate;
  }
  throw new Error('no other master');
}
