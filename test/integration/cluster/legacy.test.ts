// A Redis Cluster without sharded pub/sub (a server before Redis 7, played here by a Redis 7 whose
// SPUBLISH is renamed away): relock finds it out (COMMAND INFO SPUBLISH) and falls back to PUBLISH and
// one SUBSCRIBE connection; the fair lock, whose grants count their receivers, is refused.
import * as assert from 'uvu/assert';
import { LockError } from '../../../src/index.ts';
import { TEST_CLIENT } from '../../helpers/clients.ts';
import { clusterSuite, type RedisCluster, type SuiteClients } from '../../helpers/cluster.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { admin, calls, plainSubscriptions, shardConnections } from './support.ts';

let cluster: RedisCluster;
let client: SuiteClients;

describe('Redis Cluster without sharded pub/sub (no SPUBLISH)', (it) => {
  // On the server matrix's Redis 6.0 (test/servers.ts) the server itself has no SPUBLISH: renaming it would fail its start.
  const legacy = process.env.RELOCK_SERVER === 'redis-6.0';
  client = clusterSuite(it, { masters: 3, args: legacy ? [] : ['--rename-command', 'SPUBLISH', ''] }, (started) => (cluster = started), { leaseMs: 10_000 });

  it('wakes waiters by PUBLISH over one SUBSCRIBE connection', async () => {
    const [a, b] = [client(), client()];
    const names = Array.from({ length: 6 }, () => uniqueName());
    const held = await Promise.all(names.map((name) => a.lock(name).acquire()));
    const published = (await Promise.all(cluster.nodes.map((node) => calls(node, 'publish')))).reduce((x, y) => x + y, 0);
    const waits = names.map((name) => b.lock(name).acquire());
    await eventually(() => b.waiting === names.length, 'every waiter queued');
    const plain = await Promise.all(cluster.nodes.map(plainSubscriptions));
    const connections = plain.reduce((sum, p) => sum + p.connections, 0);
    // GLIDE's Cluster subscriber (relock's one subscriber over GLIDE) places channels on nodes of its choosing.
    if (TEST_CLIENT === 'glide') assert.ok(connections >= 1 && connections <= cluster.nodes.length, `${connections} SUBSCRIBE connections`);
    else assert.is(connections, 1, 'one SUBSCRIBE connection for every waiter');
    assert.is((await Promise.all(cluster.nodes.map(shardConnections))).reduce((x, y) => x + y, 0), 0, 'no SSUBSCRIBE');
    await Promise.all(held.map((lease) => lease.release()));
    // The holders' leases are 10 s: woken within 2 s means woken by the releases' messages.
    const leases = await within(Promise.all(waits), 2_000, 'woken by PUBLISH');
    const after = (await Promise.all(cluster.nodes.map((node) => calls(node, 'publish')))).reduce((x, y) => x + y, 0);
    assert.ok(after - published >= names.length, `${after - published} PUBLISH for ${names.length} releases`);
    await Promise.all(leases.map((lease) => lease.release()));
  });

  it('wakes a waiter whose subscriber connection was killed while the release was published', async () => {
    const [a, b] = [client(), client()];
    const name = uniqueName();
    const held = await a.lock(name).acquire();
    const waiting = b.lock(name).acquire();
    await eventually(() => b.waiting === 1, 'queued');
    // The subscriber goes, and the release is published while it is away: the message is lost.
    await Promise.all(cluster.nodes.map((node) => admin(node).call('CLIENT', 'KILL', 'TYPE', 'pubsub')));
    await held.release();
    // The holder's lease is 10 s: let through within 3 s means the new subscriber made it try again.
    const lease = await within(waiting, 3_000, 'the waiter, after its subscriber came back');
    await lease.release();
  });

  it('refuses the fair lock with ERR_LOCK_UNSUPPORTED at its first acquire, and leaves nothing behind', async () => {
    const a = client();
    const name = uniqueName();
    const error = await rejects(a.fairLock(name).acquire());
    assert.instance(error, LockError);
    assert.is((error as LockError).code, 'ERR_LOCK_UNSUPPORTED');
    assert.match((error as LockError).message, /sharded pub\/sub/);
    assert.is(await a.fairLock(name).isLocked(), false);
    // The plain lock still works on the same client.
    const lease = await a.lock(name).acquire({ waitMs: 0 });
    await lease.release();
  });
});
