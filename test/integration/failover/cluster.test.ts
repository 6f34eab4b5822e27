// A failover of the shard a fair lock lives on (CLUSTER FAILOVER on its replica), over the suites'
// Cluster client family (RELOCK_TEST_CLIENT; the client matrix runs it over every family). The old master turns replica and keeps the sharded
// subscriptions it had (SSUBSCRIBE works on a replica, and SPUBLISH reaches it), but the grant script
// on the new master counts only its own receivers: a waiter whose subscription stays there is
// dropped at every turn. relock moves a subscription off a node that no longer serves its slot
// (docs/cluster.md: within about 2 s), and a waiter dropped while its client heartbeats is granted
// through its heartbeat, so no waiter starves meanwhile.
import * as assert from 'uvu/assert';
import { LockClient } from '../../../src/index.ts';
import { keySlot } from '../../../src/runtime/slot.ts';
import { TEST_CLIENT } from '../../helpers/clients.ts';
import { SHARDED_PUBSUB, startCluster, type RedisCluster } from '../../helpers/cluster.ts';
import type { RedisServer } from '../../helpers/redis.ts';
import { describe, eventually, uniqueName, within } from '../../helpers/describe.ts';
import { sleep } from '../../helpers/fixture.ts';
import { admin, closeAdmins, promote, shardSubscribers } from '../cluster/support.ts';

let cluster: RedisCluster;
const closers: (() => unknown)[] = [];
const family = TEST_CLIENT;

/** A LockClient over a Cluster client of the suites' family (or ioredis's). */
function lockClient(leaseMs = 10_000, redis = cluster.client()): LockClient {
  const client = new LockClient({ redis, leaseMs });
  client.on('error', () => undefined);
  closers.push(() => client.close());
  return client;
}

/**
 * Promotes `replica` and waits until `master` has stepped down to a replica (a TAKEOVER, which
 * promote() falls back to on a loaded machine, may leave the old master serving its slots a while):
 * the bounds below run from there, when the Cluster's own slot map names the new master.
 */
async function failover(master: RedisServer, replica: RedisServer): Promise<void> {
  await promote(replica);
  await eventually(async () => /role:slave/.test(String(await admin(master).info('replication'))), 'the old master stepped down', 15_000);
}

/** The fair lock's base key and grant channel of `client`, the master serving them, and that master's replica. */
async function shardOf(name: string, client: LockClient) {
  const base = `relock:{${name}}:fair`;
  const master = await cluster.masterOf(keySlot(base));
  const [replica] = await cluster.replicasOf(master);
  assert.ok(replica, 'the shard has a replica');
  return { channel: `${base}:g:${client.id}`, master, replica: replica! };
}

// Three failovers, never one on a shard still settling from another.
if (SHARDED_PUBSUB) describe(`a lock across a failover of its shard, over a ${family} Cluster client`, (it) => {
  it.before(async () => {
    cluster = await startCluster({ masters: 3, replicas: 1 });
  });
  it.after(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    closeAdmins(cluster.nodes);
    await cluster.stop();
  });

  {
    it(`${family}: a waiter's grant subscription moves to the new master within 5 s, and the next release reaches it by message`, async () => {
      const [holder, waiter] = [lockClient(), lockClient()];
      const name = uniqueName('failover');
      const { channel, master, replica } = await shardOf(name, waiter);
      const held = await holder.fairLock(name).acquire();
      const waiting = waiter.fairLock(name).acquire();
      waiting.catch(() => undefined);
      await eventually(async () => (await shardSubscribers(master, channel)) === 1, 'the waiter subscribed on the master');
      await failover(master, replica);
      const promotedAt = performance.now();
      await eventually(
        async () => (await shardSubscribers(replica, channel)) === 1 && (await shardSubscribers(master, channel)) === 0,
        'the subscription on the new master, and no longer on the old one',
        5_000,
      ).catch(async (error: Error) => {
        throw new Error(`${error.message} (old master ${await shardSubscribers(master, channel)}, new ${await shardSubscribers(replica, channel)})`);
      });
      const movedMs = performance.now() - promotedAt;
      await held.release();
      // By message (or by heartbeat, as a fallback): either way within a lease, never a starved wait.
      const lease = await within(waiting, 3_000, 'the waiter granted after the failover');
      await lease.release();
      console.log(`    ${family}: subscription moved ${Math.round(movedMs)} ms after the failover`);
      await cluster.settled();
    });

    it(`${family}: a plain lock's waiter, which sends nothing while it waits, has its subscription moved to the new master within 5 s`, async () => {
      const [holder, waiter] = [lockClient(), lockClient()];
      const name = uniqueName('failover-plain');
      const channel = `relock:{${name}}:released`;
      const master = await cluster.masterOf(keySlot(channel));
      const [replica] = await cluster.replicasOf(master);
      const held = await holder.lock(name).acquire();
      const waiting = waiter.lock(name).acquire();
      waiting.catch(() => undefined);
      await eventually(async () => (await shardSubscribers(master, channel)) === 1, 'the waiter subscribed on the master');
      await failover(master, replica!);
      const promotedAt = performance.now();
      await eventually(
        async () => (await shardSubscribers(replica!, channel)) === 1 && (await shardSubscribers(master, channel)) === 0,
        'the subscription on the new master, and no longer on the old one',
        5_000,
      );
      const movedMs = performance.now() - promotedAt;
      await held.release();
      const lease = await within(waiting, 3_000, 'the waiter woken by the release');
      await lease.release();
      console.log(`    ${family}: plain lock's subscription moved ${Math.round(movedMs)} ms after the failover`);
      await cluster.settled();
    });

    it(`${family}: a client taking its turns gets the lock within 5 s of a failover while two others hand it to each other`, async () => {
      // Two clients over ioredis take turns: each release grants the lock to the other, queued
      // behind it, so the lock is never free (a heartbeat can only grant a free lock). The third
      // client, of the family, takes its turns too, so that it listens on its grant channel all along.
      // Leases of 3 s: a TAKEOVER (see promote()) may lose a release written just before it, and
      // the lock then stays taken until that lease ends, which must not exceed the bounds below.
      const loopers = [lockClient(3_000, cluster.connect()), lockClient(3_000, cluster.connect())];
      const waiter = lockClient(3_000);
      const name = uniqueName('failover-turns');
      const { channel, master, replica } = await shardOf(name, waiter);
      let stop = false;
      let turns = 0;
      const waiterTurns: number[] = [];
      const loop = (client: LockClient, mine: number[] | undefined) =>
        (async () => {
          while (!stop) {
            const lease = await client.fairLock(name).acquire({ waitMs: 60_000 });
            turns++;
            mine?.push(performance.now());
            await sleep(20);
            // A failover that had to be a TAKEOVER (the coordinated one did not happen in time on a
            // loaded machine) may lose the last writes, this hold's included.
            await lease.release().catch(() => undefined);
          }
        })();
      const loops = [loop(loopers[0]!, undefined), loop(loopers[1]!, undefined), loop(waiter, waiterTurns)];
      try {
        await eventually(() => waiterTurns.length >= 2, 'the three clients take turns');
        await eventually(async () => (await shardSubscribers(master, channel)) === 1, 'the waiter listens on the master', 10_000);
        await failover(master, replica);
        // Until the old master is a replica and the others took turns on the new one.
        await cluster.settled();
        const promoted = turns;
        await eventually(() => turns >= promoted + 3, 'the clients take turns on the new master');
        const startedAt = performance.now();
        const where = `old master ${await shardSubscribers(master, channel)}, new ${await shardSubscribers(replica, channel)}`;
        const turnsBefore = turns;
        await eventually(() => waiterTurns.some((at) => at > startedAt), `the waiter's next turn (its subscription: ${where})`, 5_000);
        const waitedMs = waiterTurns.find((at) => at > startedAt)! - startedAt;
        console.log(`    ${family}: next turn ${Math.round(waitedMs)} ms later, ${turns - turnsBefore} turns meanwhile (subscription then: ${where})`);
      } finally {
        stop = true;
        await Promise.all(loops);
      }
      await cluster.settled();
    });
  }
});
