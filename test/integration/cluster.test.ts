import * as assert from 'uvu/assert';
import { LockClient, LockLostError } from '../../src/index.ts';
import { describe, eventually, uniqueName, within } from '../helpers/describe.ts';
import { startCluster, type RedisCluster } from '../helpers/cluster.ts';

let cluster: RedisCluster;
let a: LockClient;
let b: LockClient;

describe('Redis Cluster', (it) => {
  it.before(async () => {
    cluster = await startCluster();
    a = new LockClient({ redis: cluster.connect(), leaseMs: 900 });
    b = new LockClient({ redis: cluster.connect(), leaseMs: 900 });
  });
  it.after(async () => {
    await Promise.all([a.close(), b.close()]);
    await cluster.stop();
  });

  it('keeps a lock key, its fence and its channel in one slot', async () => {
    const name = uniqueName();
    const redis = cluster.connect();
    const slots = await Promise.all([`relock:{${name}}`, `relock:{${name}}:fence`].map((key) => redis.cluster('KEYSLOT', key)));
    assert.is(slots[0], slots[1]);
  });

  it('locks, waits, wakes by pub/sub and re-enters on locks spread over every master', async () => {
    const names = Array.from({ length: 12 }, () => uniqueName());
    const held = await Promise.all(names.map((name) => a.lock(name).acquire()));
    const waits = names.map((name) => b.lock(name).runExclusive(async (lease) => {
      const nested = await b.lock(name).acquire({ waitMs: 0 });
      const count = nested.holdCount;
      await nested.release();
      return [lease.fencingToken, count] as const;
    }));
    await eventually(() => b.waiting === names.length, 'every waiter queued');
    // Renewed one lock per call (cross-slot scripts are refused): still held after several leases.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    assert.ok(held.every((lease) => !lease.signal.aborted), 'renewed across slots');
    await Promise.all(held.map((lease) => lease.release()));
    const results = await within(Promise.all(waits), 5_000, 'woken waiters');
    results.forEach(([token, count], i) => {
      assert.ok(token > held[i]!.fencingToken);
      assert.is(count, 2);
    });
  });

  it('signals a loss on a cluster node', async () => {
    const name = uniqueName();
    const lease = await a.lock(name).acquire();
    await cluster.connect().del(`relock:{${name}}`);
    await eventually(() => lease.signal.aborted, 'renewal finds the hold gone', 3_000);
    assert.instance(lease.signal.reason, LockLostError);
  });
});
