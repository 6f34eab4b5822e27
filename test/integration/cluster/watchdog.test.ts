// The watchdog on a Redis Cluster with one master frozen (SIGSTOP: its connections stay open and
// silent, and a user's `Cluster` has no command timeout): only the holds on that master's slots go
// unrenewed; the holds on the other shards are renewed and released as if nothing happened.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import * as assert from 'uvu/assert';
import { LockLostError, type Lease, type RenewMessage } from '../../../src/index.ts';
import { keySlot } from '../../../src/runtime/slot.ts';
import { clusterSuite, type RedisCluster } from '../../helpers/cluster.ts';
import { describe, eventually, uniqueName, within } from '../../helpers/describe.ts';
import type { RedisServer } from '../../helpers/redis.ts';

/** Long enough that a loaded host renews in time (rounds every 667 ms, lost 1.8 s after the last renewal sent). */
const LEASE_MS = 2_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let cluster: RedisCluster;

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

/** Releases a lease and asserts that it settled (resolved) in under `ms`. */
async function releasesWithin(lease: Lease, ms: number): Promise<number> {
  const startedAt = performance.now();
  await within(lease.release(), 2_000, `the release of "${lease.name}"`);
  const tookMs = performance.now() - startedAt;
  assert.ok(tookMs < ms, `the release of "${lease.name}" on a healthy shard settles in < ${ms} ms (took ${Math.round(tookMs)} ms)`);
  return tookMs;
}

describe('Watchdog on a Redis Cluster', (it) => {
  // A node timeout far above the freeze: the frozen master is not failed over (there is no replica)
  // and the cluster stays up on the others.
  const lockClient = clusterSuite(it, { nodeTimeoutMs: 30_000 }, (started) => (cluster = started), { leaseMs: LEASE_MS });

  it('keeps renewing the holds on other shards while one master is frozen, and their releases settle at once', async () => {
    const client = lockClient();
    const byMaster = await namesPerMaster(3);
    const [frozen, ...healthy] = [...byMaster.keys()];
    const stuck = await Promise.all(byMaster.get(frozen!)!.map((name) => client.lock(name).acquire()));
    const kept: Lease[] = [];
    for (const master of healthy) kept.push(...(await Promise.all(byMaster.get(master)!.map((name) => client.lock(name).acquire()))));
    const renewed = new Set<string>();
    const listener = (message: unknown) => {
      for (const name of (message as RenewMessage).names) renewed.add(name);
    };
    subscribe('relock:renew', listener);
    frozen!.pause();
    const pausedAt = performance.now();
    try {
      // A round after the freeze has gone out (its call to the frozen master among it) once the holds
      // elsewhere were renewed again; a release then must not wait for the frozen master's call.
      renewed.clear();
      await eventually(() => kept.every((lease) => renewed.has(lease.name)), 'a renewal round after the freeze', 3_000);
      const took = [await releasesWithin(kept.shift()!, 300)];
      // Until every hold that went unrenewed since the freeze is past its deadline.
      await sleep(Math.max(0, pausedAt + 2 * LEASE_MS - performance.now()));
      for (const lease of stuck) assert.instance(lease.signal.reason, LockLostError, 'a hold on the frozen master is lost at its deadline');
      for (const lease of kept) assert.not.ok(lease.signal.aborted, `the hold on "${lease.name}" (another shard) is kept (${String(lease.signal.reason)})`);
      for (const lease of kept) took.push(await releasesWithin(lease, 300));
      console.log(`  releases on healthy shards with one master frozen: ${took.map((ms) => Math.round(ms)).join(', ')} ms`);
    } finally {
      unsubscribe('relock:renew', listener);
      frozen!.resume();
    }
  });
});
