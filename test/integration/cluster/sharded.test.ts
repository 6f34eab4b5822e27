// relock on a Redis Cluster of three masters with one replica each: sharded pub/sub wake-ups (one
// SSUBSCRIBE connection per shard with waiters, never a plain SUBSCRIBE), renewals batched per slot,
// the fair lock's grants over SPUBLISH, and replica sync (WAIT).
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import * as assert from 'uvu/assert';
import { LockError, LockLostError, type RenewMessage } from '../../../src/index.ts';
import { keySlot } from '../../../src/runtime/slot.ts';
import { clusterSuite, type RedisCluster, shardedOnly, type SuiteClients } from '../../helpers/cluster.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { TEST_CLIENT } from '../../helpers/clients.ts';
import { admin, calls, plainSubscriptions, shardConnections, shardSubscribers } from './support.ts';

let cluster: RedisCluster;
let client: SuiteClients;
const channelOf = (name: string) => `relock:{${name}}:released`;
const masters = async () => (await Promise.all(cluster.nodes.map(async (node) => ((await admin(node).info('replication')).includes('role:master') ? node : undefined)))).filter((node) => node !== undefined);

describe('Redis Cluster: sharded pub/sub, renewals per slot, replica sync', (it) => {
  const sharded = shardedOnly(it);
  client = clusterSuite(it, { replicas: 1, nodeTimeoutMs: 2_000 }, (started) => (cluster = started), { leaseMs: 900 });

  sharded('opens one subscriber connection per shard with waiters, and closes it when they are gone', async () => {
    const [a, b] = [client(), client()];
    // 4 names on each master (12 names drawn at random missed one master 2 % of the time).
    const names: string[] = [];
    const perMaster = new Map<number, number>();
    while (names.length < 12) {
      const name = uniqueName();
      const port = (await cluster.masterOf(keySlot(channelOf(name)))).port;
      if ((perMaster.get(port) ?? 0) >= 4) continue;
      perMaster.set(port, (perMaster.get(port) ?? 0) + 1);
      names.push(name);
    }
    assert.is(perMaster.size, 3, 'the names spread over every master');
    const held = await Promise.all(names.map((name) => a.lock(name).acquire()));
    const count = async () => Promise.all((await masters()).map(shardConnections));
    // First in the file: no shard connection of an earlier test is left (they close after 2 s idle).
    await eventually(async () => (await count()).every((n) => n === 0), 'no shard connection left from earlier tests');
    const waits = names.map((name) => b.lock(name).acquire());
    await eventually(() => b.waiting === names.length, 'every waiter queued');
    assert.equal(await count(), [1, 1, 1], 'one SSUBSCRIBE connection per master for 12 waiters');
    await Promise.all(held.map((lease) => lease.release()));
    const leases = await within(Promise.all(waits), 3_000, 'every waiter woken');
    await Promise.all(leases.map((lease) => lease.release()));
    await eventually(async () => (await count()).every((n) => n === 0), 'idle shard connections closed', 5_000);
  });

  it('keeps a lock key, its fence and its channel in one slot (relock computes the same slot)', async () => {
    const name = uniqueName();
    const keys = [`relock:{${name}}`, `relock:{${name}}:fence`, channelOf(name)];
    const slots = await Promise.all(keys.map((key) => cluster.slotOf(key)));
    assert.equal(slots, keys.map(() => slots[0]));
    assert.equal(keys.map(keySlot), slots);
  });

  sharded('wakes a waiter by SPUBLISH on the shard of the lock, through SSUBSCRIBE on its master, never SUBSCRIBE', async () => {
    const [a, b] = [client({ leaseMs: 10_000 }), client({ leaseMs: 10_000 })];
    const name = uniqueName();
    const master = await cluster.masterOf(keySlot(channelOf(name)));
    const held = await a.lock(name).acquire();
    const published = await calls(master, 'spublish');
    const waiting = b.lock(name).acquire();
    await eventually(async () => (await shardSubscribers(master, channelOf(name))) === 1, 'SSUBSCRIBE on the master of the slot');
    for (const node of cluster.nodes) assert.equal(await plainSubscriptions(node), { channels: 0, connections: 0 }, `no SUBSCRIBE on ${node.port}`);
    const releasedAt = Date.now();
    await held.release();
    // The holder's lease is 10 s: a waiter that got in within a second was woken by the message.
    const lease = await within(waiting, 1_000, 'woken by the release');
    assert.ok(Date.now() - releasedAt < 1_000);
    assert.is(await calls(master, 'spublish'), published + 1, 'the release published with SPUBLISH on that master');
    await lease.release();
  });

  it('locks, waits, re-enters and renews across several leases on locks spread over every master', async () => {
    const [a, b] = [client(), client()];
    const names = Array.from({ length: 12 }, () => uniqueName());
    const held = await Promise.all(names.map((name) => a.lock(name).acquire()));
    const waits = names.map((name) =>
      b.lock(name).runExclusive(async (lease) => {
        const nested = await b.lock(name).acquire({ waitMs: 0 });
        const count = nested.holdCount;
        await nested.release();
        return [lease.fencingToken, count] as const;
      }),
    );
    await eventually(() => b.waiting === names.length, 'every waiter queued');
    await new Promise((resolve) => setTimeout(resolve, 1_200)); // over a lease: renewed 4 times
    assert.ok(held.every((lease) => !lease.signal.aborted), 'renewed across slots');
    await Promise.all(held.map((lease) => lease.release()));
    const results = await within(Promise.all(waits), 5_000, 'woken waiters');
    results.forEach(([token, count], i) => {
      assert.ok(token > held[i]!.fencingToken);
      assert.is(count, 2);
    });
  });

  it('renews the holds of one slot in one script call, never a call across slots', async () => {
    const a = client();
    // Names whose hash tag is cut short by a '}' share a slot: `relock:{<tag>}<n>}`.
    const tags = [uniqueName('tag'), uniqueName('tag')];
    const names = tags.flatMap((tag) => Array.from({ length: 10 }, (_, i) => `${tag}}${i}`));
    const loners = Array.from({ length: 4 }, () => uniqueName());
    const batches: string[][] = [];
    const listener = (message: unknown) => {
      if ((message as RenewMessage).clientId === a.id) batches.push([...(message as RenewMessage).names]);
    };
    subscribe('relock:renew', listener);
    try {
      const leases = await Promise.all([...names, ...loners].map((name) => a.lock(name).acquire()));
      // A round renews every hold whose last call has settled: the first rounds may come while the
      // acquires are still landing (on a busy machine they spread over more than a round), so the
      // rounds after they all landed are waited for.
      const whole = (tag: string) => batches.some((batch) => batch.length === 10 && batch.every((name) => name.startsWith(tag)));
      await eventually(() => batches.length >= 6 * 2 && tags.every(whole), 'a round that renews the 10 holds of each tag in one call', 5_000);
      for (const batch of batches) {
        const slots = new Set(batch.map((name) => keySlot(`relock:{${name}}`)));
        assert.is(slots.size, 1, `one slot per call: ${batch.join(', ')}`);
      }
      await Promise.all(leases.map((lease) => lease.release()));
    } finally {
      unsubscribe('relock:renew', listener);
    }
  });

  it('renews per slot with one EVALSHA per slot and round', async () => {
    const a = client({ leaseMs: 600 }); // renewed every 200 ms
    const tag = uniqueName('tag');
    const names = Array.from({ length: 25 }, (_, i) => `${tag}}${i}`);
    const master = await cluster.masterOf(keySlot(`relock:{${tag}}`));
    let rounds = 0;
    const listener = (message: unknown) => {
      if ((message as RenewMessage).clientId === a.id) rounds++;
    };
    const leases = await Promise.all(names.map((name) => a.lock(name).acquire()));
    subscribe('relock:renew', listener);
    const before = await calls(master, 'evalsha');
    try {
      await eventually(() => rounds >= 3, 'three renewal rounds', 4_000);
      const evalsha = (await calls(master, 'evalsha')) - before;
      // Other suites' clients may use this master too, but never 25 calls per round.
      assert.ok(evalsha <= rounds + 1, `${evalsha} EVALSHA on the master for ${rounds} renewal rounds of 25 holds`);
    } finally {
      unsubscribe('relock:renew', listener);
      await Promise.all(leases.map((lease) => lease.release()));
    }
  });

  it('signals a loss on a cluster node', async () => {
    const a = client();
    const name = uniqueName();
    const lease = await a.lock(name).acquire();
    await cluster.connect().del(`relock:{${name}}`);
    await eventually(() => lease.signal.aborted, 'renewal finds the hold gone', 3_000);
    assert.instance(lease.signal.reason, LockLostError);
  });

  sharded('runs the fair lock: grants reach waiters over SPUBLISH, in arrival order', async () => {
    const [a, b, c] = [client({ leaseMs: 10_000 }), client({ leaseMs: 10_000 }), client({ leaseMs: 10_000 })];
    const name = uniqueName();
    const master = await cluster.masterOf(keySlot(`relock:{${name}}`));
    const held = await a.fairLock(name).acquire();
    const order: string[] = [];
    const first = b.fairLock(name).runExclusive(() => void order.push('b'));
    await eventually(() => b.waiting === 1, 'b queued');
    await new Promise((resolve) => setTimeout(resolve, 20));
    const second = c.fairLock(name).runExclusive(() => void order.push('c'));
    await eventually(() => c.waiting === 1, 'c queued');
    const published = await calls(master, 'spublish');
    await held.release();
    await within(Promise.all([first, second]), 2_000, 'both served by grants');
    assert.equal(order, ['b', 'c']);
    assert.ok((await calls(master, 'spublish')) >= published + 2, 'grants published with SPUBLISH');
    for (const node of cluster.nodes) assert.is((await plainSubscriptions(node)).connections, 0);
  });

  sharded('wakes the waiters of a semaphore and of a read-write lock over SSUBSCRIBE too', async () => {
    const [a, b] = [client({ leaseMs: 10_000 }), client({ leaseMs: 10_000 })];
    const [semName, rwName] = [uniqueName(), uniqueName()];
    const held = [await a.semaphore(semName, { permits: 1 }).acquire(), await a.readWriteLock(rwName).writeLock().acquire()];
    const waits = [b.semaphore(semName, { permits: 1 }).acquire(), b.readWriteLock(rwName).readLock().acquire()];
    await eventually(() => b.waiting === 2, 'both queued');
    for (const node of cluster.nodes) assert.is((await plainSubscriptions(node)).connections, 0, `no SUBSCRIBE on ${node.port}`);
    await Promise.all(held.map((lease) => lease.release()));
    const leases = await within(Promise.all(waits), 1_500, 'woken by the releases (leases are 10 s)');
    await Promise.all(leases.map((lease) => lease.release()));
  });

  it('replica sync: an acquire with replicas: 1 waits for the replica (WAIT on the master of its slot)', async () => {
    const synced = client({ replicas: 1, replicaTimeoutMs: 4_000 });
    const name = uniqueName();
    const master = await cluster.masterOf(keySlot(`relock:{${name}}`));
    const [replica] = await cluster.replicasOf(master);
    const waits = await calls(master, 'wait');
    const lease = await synced.lock(name).acquire();
    assert.is(await calls(master, 'wait'), waits + 1, 'one WAIT, on the master that took the lock');
    assert.is(await admin(replica!).call('READONLY').then(() => admin(replica!).hlen(`relock:{${name}}`)), 1, 'the replica has the lock');
    await lease.release();
  });

  it('replica sync: with the replica stopped, the acquire rejects with ERR_LOCK_REPLICATION and gives the lock back', async () => {
    const synced = client({ replicas: 1, replicaTimeoutMs: 150 });
    const plain = client();
    const name = uniqueName();
    const master = await cluster.masterOf(keySlot(`relock:{${name}}`));
    const [replica] = await cluster.replicasOf(master);
    // Both clients connected first (a GLIDE Cluster client still connecting fails when a replica stops answering).
    await Promise.all([synced, plain].map((c) => c.lock(uniqueName()).isLocked()));
    replica!.pause();
    let error: unknown;
    try {
      error = await rejects(synced.lock(name).acquire());
    } finally {
      replica!.resume();
    }
    assert.instance(error, LockError);
    // Over a GLIDE Cluster client a command sometimes times out while the replica is frozen (2 of 8
    // runs; docs/clients.md#glide): the acquire then fails as unreachable. Either way, nothing is held.
    if (TEST_CLIENT === 'glide' && (error as LockError).code === 'ERR_LOCK_UNREACHABLE') {
      assert.match(String((error as LockError).cause), /TimeoutError/);
    } else {
      assert.is((error as LockError).code, 'ERR_LOCK_REPLICATION');
      assert.match((error as LockError).message, /only 0 of the 1 replicas/);
    }
    await eventually(async () => !(await plain.lock(name).isLocked()), 'given back');
    // tryAcquire too, and a client without replicas is unaffected.
    const free = await plain.lock(name).tryAcquire();
    assert.ok(free);
    await free!.release();
    await cluster.settled();
  });
});
