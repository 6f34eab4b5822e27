// The Redisson stand-in (test/helpers/redisson) against real redis-servers: two instances exclude,
// wake and outlive each other as Redisson clients do, and leave Redisson's layout in Redis.
import type { Redis } from 'ioredis';
import * as assert from 'uvu/assert';
import { shardedOnly, startCluster, type RedisCluster } from '../../helpers/cluster.ts';
import { describe, eventually, rejects, uniqueName, within, type It } from '../../helpers/describe.ts';
import { startRedis, type RedisServer } from '../../helpers/redis.ts';
import { IllegalMonitorStateError, keySlot, redissonStandIn, StandInClosedError, type RedisLike, type RedissonStandIn, type StandInOptions } from '../../helpers/redisson/index.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const instances: RedissonStandIn[] = [];
const standIn = (redis: RedisLike, options: StandInOptions = {}) => {
  const made = redissonStandIn(redis, options);
  instances.push(made);
  return made;
};

let server: RedisServer;
let admin: Redis;
const java = (options: StandInOptions = {}) => standIn(server.connect(), options);
const numsub = async (channel: string) => Number(((await admin.call('PUBSUB', 'NUMSUB', channel)) as [string, number])[1]);

/** The messages published on `channel` from now on. */
async function listen(channel: string): Promise<string[]> {
  const messages: string[] = [];
  const listener = server.connect();
  listener.on('message', (_from: string, message: string) => messages.push(message));
  await listener.subscribe(channel);
  return messages;
}

/** A private redis-server and its admin connection for the suite; every stand-in closed after it. */
function onPrivateServer(it: It): void {
  it.before(async () => {
    server = await startRedis({ private: true });
    admin = server.connect();
  });
  it.after(async () => {
    await Promise.all(instances.splice(0).map((instance) => instance.close()));
    await server.stop();
  });
}

describe('Redisson stand-in: RLock and RFencedLock', (it) => {
  onPrivateServer(it);

  it('lets two instances exclude each other on one lock under contention', async () => {
    const [a, b] = [java(), java()];
    const name = uniqueName('redisson');
    let inside = 0;
    let overlaps = 0;
    let done = 0;
    const worker = async (instance: RedissonStandIn, threadId: number) => {
      const lock = instance.lock(name);
      for (let i = 0; i < 8; i++) {
        await lock.lock(threadId);
        if (++inside > 1) overlaps++;
        await sleep(2);
        inside--;
        done++;
        await lock.unlock(threadId);
      }
    };
    await within(Promise.all([1, 2, 3].flatMap((threadId) => [worker(a, threadId), worker(b, threadId)])), 15_000, 'every worker done');
    assert.is(overlaps, 0, 'no two holders at once');
    assert.is(done, 48);
    assert.is(await admin.exists(name), 0);
    assert.is(a.renewing + b.renewing, 0, 'no renewal left');
  });

  it('counts re-entries per thread in field <uuid>:<threadId> and lets only the holder release', async () => {
    const [a, b] = [java(), java()];
    assert.match(a.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const name = uniqueName('redisson');
    const lock = a.lock(name);
    await lock.lock(1);
    await lock.lock(1);
    assert.equal(await admin.hgetall(name), { [`${a.id}:1`]: '2' });
    assert.ok((await admin.pttl(name)) > 29_000, 'the watchdog lease');
    assert.is(await lock.tryLock(2), false, 'another thread of the same instance');
    assert.is(await b.lock(name).tryLock(1), false, 'the same thread id on another instance');
    assert.instance(await rejects(b.lock(name).unlock(1)), IllegalMonitorStateError);
    await lock.unlock(1);
    assert.is(await lock.getHoldCount(1), 1);
    await lock.unlock(1);
    assert.is(await lock.isLocked(), false);
    assert.instance(await rejects(lock.unlock(1)), IllegalMonitorStateError);
    assert.is(a.renewing, 0);
    assert.equal(await admin.keys(`redisson_unlock_latch:{${name}}:*`), [], 'unlock latches deleted after the reply');
  });

  it("wakes the other instance's waiter with message 0, long before the lease ends", async () => {
    const [a, b] = [java(), java()];
    const name = uniqueName('redisson');
    const channel = `redisson_lock__channel:{${name}}`;
    const messages = await listen(channel);
    await a.lock(name).lock(1, { leaseMs: 10_000 });
    const waiting = b.lock(name).lock(1);
    await eventually(async () => (await numsub(channel)) === 2, 'the waiter subscribed');
    const releasedAt = performance.now();
    await a.lock(name).unlock(1);
    await within(waiting, 1_000, 'the woken waiter');
    assert.ok(performance.now() - releasedAt < 1_000);
    assert.equal(await admin.hgetall(name), { [`${b.id}:1`]: '1' });
    assert.ok((await admin.pttl(name)) > 29_000, "the waiter's own watchdog lease");
    await eventually(async () => (await numsub(channel)) === 1, 'the waiter unsubscribed');
    await b.lock(name).unlock(1);
    await eventually(() => messages.length >= 2, 'both release messages');
    assert.equal(messages, ['0', '0']);
    assert.is(b.unparsableMessages.length, 0);
  });

  it("frees a killed instance's hold at its lease end, not before", async () => {
    const a = java({ leaseMs: 1_500 });
    const b = java();
    const name = uniqueName('redisson');
    await a.lock(name).lock(1);
    await sleep(2_000);
    assert.ok((await admin.pttl(name)) > 700, 'renewed past its first lease');
    a.kill();
    const killedAt = performance.now();
    await within(b.lock(name).lock(1), 4_000, 'the hold of the dead instance runs out');
    const waitedMs = performance.now() - killedAt;
    assert.ok(waitedMs > 800 && waitedMs < 2_500, `waited ${waitedMs} ms`);
    assert.instance(await rejects(a.lock(name).lock(2)), StandInClosedError);
    await b.lock(name).unlock(1);
  });

  it('renews while its field exists and stops silently when the field is gone', async () => {
    const a = java({ leaseMs: 600 });
    const b = java();
    const name = uniqueName('redisson');
    await a.lock(name).lock(1);
    assert.is(a.renewing, 1);
    await sleep(1_000);
    assert.ok((await admin.pttl(name)) > 0, 'renewed');
    assert.ok(await b.lock(name).forceUnlock());
    await b.lock(name).lock(7, { leaseMs: 5_000 });
    await eventually(() => a.renewing === 0, 'the watchdog dropped the hold', 1_500);
    assert.ok((await admin.pttl(name)) > 3_000, "the other holder's expiry untouched");
    await b.lock(name).unlock(7);
  });

  it('draws fencing tokens that strictly increase across instances, re-entries included', async () => {
    const [a, b] = [java(), java()];
    const name = uniqueName('redisson');
    const fa = a.lock(name, { fenced: true });
    const first = await fa.lockAndGetToken(1);
    const reentered = await fa.lockAndGetToken(1);
    assert.ok(reentered > first);
    assert.is(await b.lock(name, { fenced: true }).tryLockAndGetToken(1, { waitMs: 0 }), null);
    await fa.unlock(1);
    await fa.unlock(1);
    const tokens: number[] = [];
    const worker = async (instance: RedissonStandIn, threadId: number) => {
      const lock = instance.lock(name, { fenced: true });
      for (let i = 0; i < 5; i++) {
        tokens.push((await lock.tryLockAndGetToken(threadId, { waitMs: 5_000 }))!);
        await lock.unlock(threadId);
      }
    };
    await within(Promise.all([worker(a, 1), worker(a, 2), worker(b, 1), worker(b, 2)]), 10_000, 'every worker done');
    assert.is(tokens.length, 20);
    tokens.reduce((previous, token) => {
      assert.ok(token > previous, `token ${token} after ${previous}`);
      return token;
    }, reentered);
    assert.is(await admin.get(`redisson_lock_token:{${name}}`), String(tokens.at(-1)));
    assert.is(await admin.pttl(`redisson_lock_token:{${name}}`), -1, 'the token key never expires');
  });
});

describe('Redisson stand-in: RFairLock, RReadWriteLock, RPermitExpirableSemaphore', (it) => {
  onPrivateServer(it);

  it('serves fair-lock waiters in join order, each woken on its own channel', async () => {
    const [a, b] = [java(), java()];
    const name = uniqueName('redisson');
    const fair = (instance: RedissonStandIn) => instance.fairLock(name, { waitTimeoutMs: 5_000 });
    await fair(a).lock(1);
    const joins: [RedissonStandIn, number][] = [[b, 1], [a, 2], [b, 2], [a, 3]];
    const served: string[] = [];
    const waits: Promise<void>[] = [];
    for (const [instance, threadId] of joins) {
      const lock = fair(instance);
      waits.push(lock.lock(threadId).then(async () => {
        served.push(lock.owner(threadId));
        await sleep(5);
        await lock.unlock(threadId);
      }));
      await eventually(async () => (await admin.llen(`redisson_lock_queue:{${name}}`)) === waits.length, 'the waiter joined');
    }
    const owners = joins.map(([instance, threadId]) => `${instance.id}:${threadId}`);
    assert.equal(await admin.lrange(`redisson_lock_queue:{${name}}`, 0, -1), owners);
    const deadlines = await Promise.all(owners.map(async (owner) => Number(await admin.zscore(`redisson_lock_timeout:{${name}}`, owner))));
    assert.ok(Math.abs(deadlines[0]! - (Date.now() + 30_000 + 5_000)) < 1_000, 'the first: now + PTTL + wait, on the caller clock');
    for (let i = 1; i < deadlines.length; i++) assert.is(deadlines[i]! - deadlines[i - 1]!, 5_000, 'each later: the previous + wait');
    // Redisson subscribes after its queue entry is written: the channel has its listener soon after.
    await eventually(async () => (await numsub(`redisson_lock__channel:{${name}}:${b.id}:1`)) === 1, 'a channel per waiter');
    await fair(a).unlock(1);
    await within(Promise.all(waits), 5_000, 'every waiter served');
    assert.equal(served, owners);
    assert.is(await admin.exists(name, `redisson_lock_queue:{${name}}`, `redisson_lock_timeout:{${name}}`), 0);
  });

  it('shares read holds, excludes the writer, and wakes every waiting reader with the one message 1', async () => {
    const [a, b] = [java(), java()];
    const name = uniqueName('redisson');
    const channel = `redisson_rwlock:{${name}}`;
    const messages = await listen(channel);
    const rw = (instance: RedissonStandIn) => instance.readWriteLock(name);
    assert.ok(await rw(a).readLock().tryLock(1));
    assert.ok(await rw(b).readLock().tryLock(1));
    assert.equal(await admin.hgetall(name), { mode: 'read', [`${a.id}:1`]: '1', [`${b.id}:1`]: '1' });
    assert.ok((await admin.pttl(`{${name}}:${a.id}:1:rwlock_timeout:1`)) > 29_000, "a read hold's timeout key");
    assert.not.ok(await rw(a).writeLock().tryLock(2));
    const writing = rw(b).writeLock().lock(5);
    await eventually(async () => (await numsub(channel)) === 2, 'the writer subscribed');
    await rw(a).readLock().unlock(1);
    await rw(b).readLock().unlock(1);
    await within(writing, 1_000, 'the writer woken by the last read release');
    assert.equal(await admin.hgetall(name), { mode: 'write', [`${b.id}:5:write`]: '1' });
    const readers = [rw(a).readLock().lock(1), rw(a).readLock().lock(2)];
    await eventually(async () => (await numsub(channel)) === 2, 'the readers subscribed');
    await sleep(100);
    await rw(b).writeLock().unlock(5);
    await within(Promise.all(readers), 1_000, 'both readers woken by one write release');
    await rw(a).readLock().unlock(1);
    await rw(a).readLock().unlock(2);
    await eventually(() => messages.length >= 3, 'the three release messages');
    assert.equal(messages, ['0', '1', '0']);
    assert.is(await admin.exists(name), 0);
  });

  it("keeps the hash on a read release only while another reader's rwlock_timeout key lives", async () => {
    const [a, b] = [java(), java()];
    const name = uniqueName('redisson');
    const read = (instance: RedissonStandIn) => instance.readWriteLock(name).readLock();
    await read(a).lock(1);
    await read(b).lock(1, { leaseMs: 20_000 });
    await read(a).unlock(1);
    assert.equal(await admin.hgetall(name), { mode: 'read', [`${b.id}:1`]: '1' });
    const pttl = await admin.pttl(name);
    assert.ok(pttl > 15_000 && pttl <= 20_000, `the expiry follows the remaining timeout key: ${pttl}`);
    // A peer's reader with a field but no timeout key: a Redisson read release deletes the lock under it.
    await admin.hset(name, 'peer:1', '1');
    await read(b).unlock(1);
    assert.is(await admin.exists(name), 0, 'the pitfall: deleted under the peer reader');
  });

  it('never hands out more permits than set; ids are 16 raw bytes; an expired permit comes back', async () => {
    const [a, b] = [java(), java()];
    const name = uniqueName('redisson');
    const sem = (instance: RedissonStandIn) => instance.permitSemaphore(name);
    assert.ok(await sem(a).trySetPermits(2));
    assert.not.ok(await sem(b).trySetPermits(5));
    let inside = 0;
    let most = 0;
    const worker = async (instance: RedissonStandIn) => {
      for (let i = 0; i < 4; i++) {
        const id = await sem(instance).acquire({ leaseMs: 5_000 });
        assert.match(id, /^[0-9a-f]{32}$/);
        most = Math.max(most, ++inside);
        await sleep(3);
        inside--;
        await sem(instance).release(id);
      }
    };
    await within(Promise.all([a, a, b, b, b].map(worker)), 10_000, 'every worker done');
    assert.ok(most >= 1 && most <= 2, `at most 2 at once, saw ${most}`);
    assert.is(await admin.get(name), '2');
    const dying = await sem(a).acquire({ leaseMs: 400 });
    const [member] = await admin.zrangeBuffer(`{${name}}:timeout`, '0', '-1');
    assert.is(member!.length, 16);
    assert.is(member!.toString('hex'), dying);
    const kept = await sem(b).acquire();
    const startedAt = performance.now();
    const late = await within(sem(b).acquire(), 2_000, 'the expired permit given back');
    const waitedMs = performance.now() - startedAt;
    assert.ok(waitedMs > 250, `waited for the expiry: ${waitedMs} ms`);
    assert.instance(await rejects(sem(a).release(dying)), Error, 'an expired permit cannot be released');
    await sem(b).release(kept);
    await sem(b).release(late);
    assert.is(await sem(a).availablePermits(), 2);
  });
});

describe('Redisson stand-in on a Cluster', (it) => {
  let cluster: RedisCluster;
  it.before(async () => {
    cluster = await startCluster();
  });
  it.after(async () => {
    await Promise.all(instances.splice(0).map((instance) => instance.close()));
    await cluster.stop();
  });

  shardedOnly(it)('hands locks over by SPUBLISH to SSUBSCRIBErs on the shard owners, and renews per slot', async () => {
    const [a, b] = [standIn(cluster.connect(), { sharded: true, leaseMs: 900 }), standIn(cluster.connect(), { sharded: true })];
    const names = [uniqueName('redisson'), uniqueName('redisson'), uniqueName('redisson')];
    for (const name of names) await a.lock(name).lock(1);
    await sleep(1_200);
    for (const name of names) {
      const channel = `redisson_lock__channel:{${name}}`;
      assert.is(keySlot(channel), await cluster.slotOf(channel), 'our CRC16 matches CLUSTER KEYSLOT');
      const owner = (await cluster.masterOf(keySlot(channel))).connect();
      assert.ok((await owner.pttl(name)) > 0, 'renewed past its first lease');
      const waiting = b.lock(name).lock(1);
      const shardSubscribers = async () => Number(((await owner.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number])[1]);
      await eventually(async () => (await shardSubscribers()) === 1, 'the waiter SSUBSCRIBEd on the owner');
      assert.equal(await owner.call('PUBSUB', 'CHANNELS'), [], 'no plain SUBSCRIBE');
      const releasedAt = performance.now();
      await a.lock(name).unlock(1);
      await within(waiting, 1_000, 'the waiter woken by SPUBLISH');
      assert.ok(performance.now() - releasedAt < 1_000);
      await b.lock(name).unlock(1);
    }
    const fairName = uniqueName('redisson');
    await a.fairLock(fairName).lock(1, { leaseMs: 10_000 });
    const fairWaiter = b.fairLock(fairName).lock(1);
    const owner = (await cluster.masterOf(keySlot(fairName))).connect();
    await eventually(async () => (await owner.llen(`redisson_lock_queue:{${fairName}}`)) === 1, 'the fair waiter queued');
    await a.fairLock(fairName).unlock(1);
    await within(fairWaiter, 1_000, "the fair waiter woken on its own shard channel");
    await b.fairLock(fairName).unlock(1);
  });

  it('hands a lock over by PUBLISH/SUBSCRIBE without sharded (Redisson on Redis 6, or sharding off)', async () => {
    const [a, b] = [standIn(cluster.connect()), standIn(cluster.connect())];
    assert.is(a.publishCommand, 'PUBLISH');
    const name = uniqueName('redisson');
    await a.lock(name).lock(1, { leaseMs: 10_000 });
    const waiting = b.lock(name).lock(1);
    const channel = `redisson_lock__channel:{${name}}`;
    const nodes = cluster.nodes.map((node) => node.connect());
    const subscribers = async () => {
      let count = 0;
      for (const node of nodes) count += Number(((await node.call('PUBSUB', 'NUMSUB', channel)) as [string, number])[1]);
      return count;
    };
    await eventually(async () => (await subscribers()) === 1, 'the waiter SUBSCRIBEd on some node');
    const releasedAt = performance.now();
    await a.lock(name).unlock(1);
    await within(waiting, 1_000, 'the waiter woken by PUBLISH');
    assert.ok(performance.now() - releasedAt < 1_000);
    await b.lock(name).unlock(1);
  });
});
