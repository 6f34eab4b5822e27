// A waiter on a Redis Cluster whose shard changes under it is never stranded: its subscription
// follows a slot moved to another master, a failover to the replica, and a killed connection, and
// the release that follows wakes it by its message (the holders' leases are far longer than the
// bounds asserted here, so a waiter woken only by its fallback timer would fail them).
import * as assert from 'uvu/assert';
import { LockError } from '../../../src/index.ts';
import { keySlot } from '../../../src/runtime/slot.ts';
import { TEST_CLIENT } from '../../helpers/clients.ts';
import { clusterSuite, type RedisCluster, shardedOnly, type SuiteClients } from '../../helpers/cluster.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { sleep } from '../../helpers/fixture.ts';
import { admin, moveSlot, otherMaster, promote, shardSubscribers } from './support.ts';

let cluster: RedisCluster;
let client: SuiteClients;
const channelOf = (name: string) => `relock:{${name}}:released`;

/** A holds `name`, B waits for it, subscribed on the master of its slot. */
async function heldAndWaited(name: string) {
  const [a, b] = [client(), client()];
  const slot = keySlot(channelOf(name));
  const master = await cluster.masterOf(slot);
  const held = await a.lock(name).acquire();
  const waiting = b.lock(name).acquire();
  waiting.catch(() => undefined); // a failed test closes the clients under it
  await eventually(async () => (await shardSubscribers(master, channelOf(name))) === 1, 'the waiter subscribed on the master');
  return { a, b, slot, master, held, waiting };
}

/**
 * The release wakes the waiter through its (moved) subscription, within 1.5 s; over GLIDE, whose
 * subscriber moves by itself and says nothing, within 3 s (relock notices a subscription GLIDE lost
 * within 250 ms, GLIDE puts it back within its 500 ms reconciliation, then the waiter tries again).
 */
async function releaseWakes(held: { release(): Promise<void> }, waiting: Promise<{ release(): Promise<void> }>) {
  await held.release();
  const lease = await within(waiting, TEST_CLIENT === 'glide' ? 3_000 : 1_500, 'the waiter woken by the release');
  await lease.release();
}

describe('Redis Cluster: a waiter follows its shard', (it) => {
  const sharded = shardedOnly(it);
  client = clusterSuite(it, { replicas: 1, nodeTimeoutMs: 2_000 }, (started) => (cluster = started), { leaseMs: 20_000 });

  sharded('follows a slot moved to another master mid-wait (SETSLOT MIGRATING/IMPORTING, MIGRATE, SETSLOT NODE)', async () => {
    const name = uniqueName();
    const { slot, master, held, waiting } = await heldAndWaited(name);
    const target = await otherMaster(cluster, master);
    await moveSlot(cluster, slot, target);
    await eventually(async () => (await shardSubscribers(target, channelOf(name))) === 1, 'resubscribed on the new master', 5_000);
    assert.is(await shardSubscribers(master, channelOf(name)), 0, 'gone from the old one');
    await releaseWakes(held, waiting);
    await cluster.settled();
  });

  sharded('follows a failover to the replica mid-wait (CLUSTER FAILOVER)', async () => {
    const name = uniqueName();
    const { master, held, waiting } = await heldAndWaited(name);
    const [replica] = await cluster.replicasOf(master);
    await promote(replica!);
    // GLIDE's subscriber (relock's over GLIDE) may stay on the old master, a replica of the same shard
    // now, which SPUBLISH reaches through replication: the release below must still wake the waiter.
    // A release published while the old master is still switching roles can be missed there with no
    // sign GLIDE shows (docs/clients.md, GLIDE): over GLIDE the release waits for the switch.
    const on = TEST_CLIENT === 'glide' ? [replica!, master] : [replica!];
    if (TEST_CLIENT === 'glide') await eventually(async () => String(await admin(master).call('ROLE')).startsWith('slave'), 'the old master a replica', 5_000);
    await eventually(async () => (await Promise.all(on.map((node) => shardSubscribers(node, channelOf(name))))).some((n) => n >= 1), 'subscribed on the new master', 5_000);
    await releaseWakes(held, waiting);
    await cluster.settled();
  });

  sharded('subscribes again when its shard connection is killed mid-wait, and wakes every waiter to retry', async () => {
    const name = uniqueName();
    const { b, master, held, waiting } = await heldAndWaited(name);
    await admin(master).call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await eventually(async () => (await shardSubscribers(master, channelOf(name))) === 1, 'subscribed again', 5_000);
    assert.is(b.waiting, 1);
    await releaseWakes(held, waiting);
  });

  it('takes and releases locks on a moved slot with no waiter in between', async () => {
    const a = client();
    const name = uniqueName();
    const slot = keySlot(channelOf(name));
    const master = await cluster.masterOf(slot);
    const lease = await a.lock(name).acquire();
    await moveSlot(cluster, slot, await otherMaster(cluster, master));
    await lease.release();
    const again = await a.lock(name).acquire({ waitMs: 0 });
    await again.release();
    await cluster.settled();
  });

  it('rides out a slot with no master (CLUSTERDOWN) in a finite wait, and reports it as unreachable without one', async () => {
    // The window a failover leaves until the new master is known, made on purpose: the slot's master
    // stops claiming it (its Cluster state goes "fail"), then claims it again during the wait.
    const a = client();
    const name = uniqueName();
    const slot = keySlot(channelOf(name));
    const master = await cluster.masterOf(slot);
    await admin(master).call('CLUSTER', 'DELSLOTS', String(slot));
    try {
      await eventually(async () => /cluster_state:fail/.test(String(await admin(master).call('CLUSTER', 'INFO'))), 'the master says the Cluster is down');
      const error = (await within(rejects(a.lock(name).acquire()), 10_000, 'acquire() with no master for the slot')) as LockError;
      assert.instance(error, LockError, `a LockError (got ${String(error)})`);
      assert.is(error.code, 'ERR_LOCK_UNREACHABLE');
      const waiting = a.lock(name).acquire({ waitMs: 10_000 });
      await sleep(500);
      await admin(master).call('CLUSTER', 'ADDSLOTS', String(slot));
      const lease = await within(waiting, 12_000, 'the wait across CLUSTERDOWN');
      await lease.release();
    } finally {
      await admin(master).call('CLUSTER', 'ADDSLOTS', String(slot)).catch(() => undefined);
    }
    await cluster.settled();
  });
});
