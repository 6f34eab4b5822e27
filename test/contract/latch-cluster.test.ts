// The count-down latch's contract (latch-contract.ts) on a Redis Cluster of 3 masters: its keys and
// channel in one slot, its message published with SPUBLISH and heard on the shard's subscriber.
import { LockClient } from '../../src/index.ts';
import { startCluster } from '../helpers/cluster.ts';
import { latchContract } from './latch-contract.ts';

latchContract('client.countDownLatch() on a Redis Cluster', async () => {
  const cluster = await startCluster();
  const clients = new Set<LockClient>();
  return {
    client() {
      const client = new LockClient({ redis: cluster.client() });
      clients.add(client);
      return client;
    },
    admins: cluster.nodes.map((node) => node.connect()),
    async stop() {
      await Promise.all([...clients].map((client) => client.close()));
      await cluster.stop();
    },
  };
});
