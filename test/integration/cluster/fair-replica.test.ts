// The fair lock on a Cluster shard with a replica: SPUBLISH reaches the shard's replicas, but the
// master counts only its own receivers. A grantee listening on a replica (a client with a stale view
// of the slots, after a failover) must never hear of a grant the script did not record, and no token
// may go to two parties.
import * as assert from 'uvu/assert';
import { keySlot } from '../../../src/runtime/slot.ts';
import { clusterSuite, type RedisCluster, SHARDED_PUBSUB, type SuiteClients } from '../../helpers/cluster.ts';
import { describe, eventually, uniqueName, within } from '../../helpers/describe.ts';
import { sleep } from '../../helpers/fixture.ts';
import { admin } from './support.ts';

let cluster: RedisCluster;
let client: SuiteClients;

// The fair lock needs sharded pub/sub on a Cluster: without it (Redis 6.0) it is refused, as names.test.ts checks.
if (SHARDED_PUBSUB) describe('LockClient#fairLock on a Cluster shard with a replica', (it) => {
  client = clusterSuite(it, { masters: 3, replicas: 1 }, (started) => (cluster = started), { leaseMs: 10_000 });

  it('tells no receiver on a replica of a grant it skipped: the next waiter gets the lock and its token alone', async () => {
    const name = uniqueName('fair');
    const base = `relock:{${name}}:fair`;
    const master = await cluster.masterOf(keySlot(base));
    const [replica] = await cluster.replicasOf(master);
    assert.ok(replica, 'the shard has a replica');
    const [holder, next] = [client(), client()];
    const held = await holder.fairLock(name).acquire();

    // A waiter whose client listens on the replica only: queued like a real one.
    const stale = `stale-${Math.random().toString(36).slice(2)}`;
    const owner = `${stale}:0`;
    const channel = `${base}:g:${stale}`;
    const listener = replica!.connect();
    const heard: string[] = [];
    listener.on('smessage', (_channel: string, message: string) => heard.push(message));
    await listener.call('SSUBSCRIBE', channel);
    // The replica hears what the master publishes on that channel: the test is not vacuous.
    const onMaster = admin(master);
    await eventually(async () => {
      await onMaster.call('SPUBLISH', channel, 'probe');
      await sleep(20);
      return heard.includes('probe');
    }, 'a message published on the master reaches the receiver on the replica');
    const [seconds] = await onMaster.time();
    await onMaster.rpush(`${base}:q`, owner);
    await onMaster.zadd(`${base}:d`, Number(seconds) * 1000 + 10_000, owner);

    const waiting = next.fairLock(name).acquire();
    await eventually(async () => (await onMaster.llen(`${base}:q`)) === 2, 'the live waiter queued behind');
    await held.release();
    const lease = await within(waiting, 3_000, 'the live waiter behind the one on the replica');
    await sleep(300);
    const grants = heard.filter((message) => message !== 'probe');
    const told = grants.map((message) => message.split('|')[1]);
    assert.not.ok(told.includes(String(lease.fencingToken)), `token ${lease.fencingToken} was also told to the receiver on the replica`);
    assert.equal(grants, [], 'the replica heard no grant');
    assert.is(await onMaster.hexists(base, owner), 0, 'no grant recorded for the skipped waiter');
    await lease.release();
    listener.disconnect();
  });
});
