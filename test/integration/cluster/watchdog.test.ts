// The watchdog on a Redis Cluster with one master frozen (SIGSTOP: its connections stay open and
// silent, and a user's `Cluster` has no command timeout): only the holds on that master's slots go
// unrenewed; the holds on the other shards are renewed and released as if nothing happened.
import * as assert from 'uvu/assert';
import { LockClient, LockLostError, type Lease } from '../../../src/index.ts';
import { keySlot } from '../../../src/runtime/slot.ts';
import { startCluster, type RedisCluster } from '../../helpers/cluster.ts';
import { describe, uniqueName, within } from '../../helpers/describe.ts';
import type { RedisServer } from '../../helpers/redis.ts';
import { closeAdmins } from './support.ts';

const LEASE_MS = 600;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let cluster: RedisCluster;
const clients: LockClient[] = [];

/** Names until each master serves at least `perMaster` of them (by the slot of the lock key). */
async function namesPerMaster(perMaster: number): Promise<Map<RedisServer, string[]>> {
  const byMaster = new Map<RedisServer, string[]>();
  while (byMaster.size < 3 || [...byMaster.values()].some((names) => names.length < perMaster)) {
    const name = uniqueName('wd');
    const master = await cluster.masterOf(keySlot(`relock:{${name}}`));
    const names = byMaster.get(master) ?? [];
    if (names.length < perMaster) names.push(name);
    byMaster.set(master, names);
  }
  return byMaster;
}

describe('Watchdog on a Redis Cluster', (it) => {
  it.before(async () => {
    // A node timeout far above the freeze: the frozen master is not failed over (there is no replica)
    // and the cluster stays up on the others.
    cluster = await startCluster({ nodeTimeoutMs: 15_000 });
  });
  it.after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    closeAdmins(cluster.nodes);
    await cluster.stop();
  });

  it('keeps renewing the holds on other shards while one master is frozen, and their releases settle at once', async () => {
    const client = new LockClient({ redis: cluster.connect(), leaseMs: LEASE_MS });
    client.on('error', () => undefined);
    clients.push(client);
    const byMaster = await namesPerMaster(2);
    const [frozen, ...healthy] = [...byMaster.keys()];
    const stuck = await Promise.all(byMaster.get(frozen!)!.map((name) => client.lock(name).acquire()));
    const kept: Lease[] = [];
    for (const master of healthy) kept.push(...(await Promise.all(byMaster.get(master)!.map((name) => client.lock(name).acquire()))));
    frozen!.pause();
    try {
      // Three leases: every hold that went unrenewed since the freeze is past its deadline by then.
      await sleep(3 * LEASE_MS);
      for (const lease of stuck) assert.instance(lease.signal.reason, LockLostError, 'a hold on the frozen master is lost at its deadline');
      for (const lease of kept) assert.not.ok(lease.signal.aborted, `the hold on "${lease.name}" (another shard) is kept`);
      for (const lease of kept) {
        const startedAt = performance.now();
        await within(lease.release(), 5_000, `the release of "${lease.name}"`);
        const tookMs = performance.now() - startedAt;
        assert.ok(tookMs < 300, `the release of "${lease.name}" on a healthy shard settles in < 300 ms (took ${Math.round(tookMs)} ms)`);
      }
    } finally {
      frozen!.resume();
    }
  });
});
