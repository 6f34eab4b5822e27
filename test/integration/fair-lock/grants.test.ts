// A grant is owned once: the scripts record a grant (hash field, fence) before they tell it, and
// tell only what they recorded, so a receiver their count missed (a subscriber on a replica) never
// holds beside the grantee, and no token goes to two holders. A heartbeat never queues again an
// owner whose wait ended, even when NOSCRIPT makes it run after that owner's `leave`.
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import * as lua from '../../../src/generated/fair-lock.ts';
import { LockClient, type Lease } from '../../../src/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { setup, sleep } from '../../helpers/fixture.ts';
import { startProxy } from '../../helpers/proxy.ts';
import { startPrivateRedis, startReplicaOf, type RedisServer } from '../../helpers/redis.ts';
import { fairKeys, grantChannel, queued } from './support.ts';

const H = 200;

describe('LockClient#fairLock grant to a receiver PUBLISH does not count', (it) => {
  let primary: RedisServer;
  let replica: RedisServer;
  const clients: LockClient[] = [];
  const connections: Redis[] = [];
  it.before(async () => {
    primary = await startPrivateRedis();
    replica = await startReplicaOf(primary);
  });
  it.after(async () => {
    await Promise.all(clients.map((client) => client.close()));
    for (const connection of connections) connection.disconnect();
    await replica.stop();
    await primary.stop();
  });

  /** A client whose commands go to the primary and whose subscriber listens on the replica (a stale view of the topology). */
  const onReplica = () => {
    const commands = new Redis({ host: primary.host, port: primary.port });
    commands.on('error', () => undefined);
    connections.push(commands);
    commands.duplicate = ((override?: object) => {
      const subscriber = new Redis({ host: replica.host, port: replica.port, ...override });
      subscriber.on('error', () => undefined);
      connections.push(subscriber);
      return subscriber;
    }) as never;
    const client = new LockClient({ redis: commands });
    clients.push(client);
    return client;
  };
  const plain = () => {
    const client = new LockClient({ redis: primary.url });
    clients.push(client);
    return client;
  };

  it('never gives two holders one token: a grantee listening on a replica is skipped, and served by its heartbeat', async () => {
    const name = uniqueName('fair');
    const admin = primary.connect();
    const stale = onReplica();
    const holder = plain();
    const next = plain();
    // What the replica's receivers hear on the stale client's grant channel.
    const heard: string[] = [];
    const observer = replica.connect();
    observer.on('message', (_channel: string, message: string) => heard.push(message));
    await observer.subscribe(grantChannel(name, stale.id));

    const held = await holder.fairLock(name).acquire();
    const leases: { who: string; lease: Lease }[] = [];
    let staleHeldAt: number | undefined;
    const staleWait = stale
      .fairLock(name)
      .acquire({ waitMs: 10_000 })
      .then((lease) => {
        staleHeldAt = performance.now();
        leases.push({ who: 'stale', lease });
        return lease;
      });
    await queued(admin, name, 1);
    const nextWait = next.fairLock(name).acquire();
    await queued(admin, name, 2);
    await held.release();
    const nextLease = await within(nextWait, 3_000, 'the waiter behind the one on the replica');
    leases.push({ who: 'next', lease: nextLease });
    // A grant message on the replica, had there been one, arrives at once.
    await sleep(300);
    const beside = leases.find(({ who }) => who === 'stale')?.lease;
    assert.is(beside?.fencingToken, undefined, `the stale client holds the lock beside the grantee (token ${nextLease.fencingToken})`);
    assert.equal(heard, [], 'the replica heard no grant: the primary recorded none for the stale client');
    const releasedAt = performance.now();
    await nextLease.release();
    // Its heartbeat queued it again and, the lock free, its reply grants it: no listener needed.
    const staleLease = await within(staleWait, 5_000, 'the waiter on the replica, by its heartbeat');
    assert.ok(staleHeldAt! >= releasedAt, 'held only after the grantee released');
    assert.ok(staleLease.fencingToken > nextLease.fencingToken, `tokens ${nextLease.fencingToken} then ${staleLease.fencingToken}`);
    assert.is(new Set(leases.map(({ lease }) => lease.fencingToken)).size, leases.length, 'no token issued twice');
    await staleLease.release();
  });

  it('serves a grantee listening on a replica by its heartbeat also on a lock that is never free: two clients hand it to each other', async () => {
    const name = uniqueName('fair');
    const stale = onReplica();
    const loopers = [plain(), plain()];
    let stop = false;
    let turns = 0;
    /** Every hold, as [start, end] in ms of this process: none may overlap. */
    const holds: [number, number][] = [];
    const loop = (client: LockClient) =>
      (async () => {
        while (!stop) {
          const lease = await client.fairLock(name).acquire({ waitMs: 30_000 });
          const start = performance.now();
          turns++;
          await sleep(20);
          holds.push([start, performance.now()]);
          await lease.release();
        }
      })();
    const loops = loopers.map(loop);
    try {
      // Each release grants the lock to the other looper, queued behind it: the lock is never free,
      // so no heartbeat can grant it; the stale waiter is dropped at its first turn (nobody listens
      // on the primary), queued again by its heartbeat, marked, and granted at its next turn.
      await eventually(() => turns >= 4, 'the two clients take turns');
      const before = turns;
      const lease = await within(stale.fairLock(name).acquire({ waitMs: 5_000 }), 6_000, 'the waiter on the replica, on a busy lock');
      const start = performance.now();
      await sleep(20);
      holds.push([start, performance.now()]);
      await lease.release();
      assert.ok(turns - before >= 1, `the others took ${turns - before} turns meanwhile`);
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    holds.sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < holds.length; i++) assert.ok(holds[i]![0] >= holds[i - 1]![1], `holds ${i - 1} and ${i} overlap`);
  });
});

describe('LockClient#fairLock heartbeat after NOSCRIPT', (it) => {
  const s = setup(it);

  it('never queues again a waiter that left while its heartbeat was answered NOSCRIPT', async () => {
    const name = uniqueName('fair');
    const keys = fairKeys(name);
    const proxy = await startProxy({ host: s.f.server.host, port: s.f.server.port });
    try {
      const cut = s.f.client({ redis: { ...proxy.options } });
      cut.on('error', () => undefined);
      const held = await s.client.fairLock(name).acquire();
      const controller = new AbortController();
      const waiting = cut.fairLock(name).acquire({ signal: controller.signal });
      await queued(s.f.admin, name, 1);
      const [owner] = await s.f.admin.lrange(keys.queue, 0, -1);
      // A heartbeat goes out and is held; meanwhile the script cache is flushed, with the leave
      // script loaded again: the held heartbeat's EVALSHA is answered NOSCRIPT and its EVAL goes
      // out after the waiter's leave, which runs at once.
      proxy.blackhole();
      await sleep(2 * H + 100);
      await s.f.admin.script('FLUSH');
      await s.f.admin.script('LOAD', lua.leave.source);
      controller.abort();
      await sleep(50);
      proxy.pass();
      assert.instance(await within(rejects(waiting), 3_000, 'the aborted acquire'), Error);
      await eventually(async () => ((await s.f.admin.script('EXISTS', lua.heartbeat.sha1)) as number[])[0] === 1, 'the heartbeat ran again by EVAL');
      await sleep(50);
      assert.equal(await s.f.admin.lrange(keys.queue, 0, -1), [], `the waiter that left (${owner}) is not queued again`);
      assert.is(await s.f.admin.zscore(keys.deadlines, owner!), null);
      await held.release();
    } finally {
      await proxy.close();
    }
  });
});

describe('LockClient#fairLock grant confirm after NOSCRIPT', (it) => {
  const s = setup(it);

  it("runs the confirm before the grantee's own release, even when its EVALSHA is answered NOSCRIPT", async () => {
    const name = uniqueName('fair');
    const monitor = await s.f.admin.monitor();
    const order: string[] = [];
    const confirmAsMonitored = lua.confirm.source.replace(/[\\"\n\r\t]/g, (c) => ({ '\\': '\\\\', '"': '\\"', '\n': '\\n', '\r': '\\r', '\t': '\\t' })[c]!);
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (!args.some((arg) => arg.includes(name))) return;
      // EVAL carries the script's source as sent (the generated one, without its header), which
      // MONITOR prints escaped.
      if (args[0]?.toLowerCase() === 'eval' && args[1] === confirmAsMonitored) order.push('confirm by EVAL');
      if (args[0]?.toLowerCase() === 'evalsha' && args[1] === lua.release.sha1) order.push('release');
    });
    try {
      const held = await s.client.fairLock(name).acquire();
      const waiting = s.other.fairLock(name).acquire();
      await queued(s.f.admin, name, 1);
      // The cache loses the confirm script, not the release: the grantee's confirm is answered
      // NOSCRIPT and goes out again as EVAL, while the release it makes at once is known.
      await s.f.admin.script('FLUSH');
      await s.f.admin.script('LOAD', lua.release.source);
      await held.release();
      const lease = await within(waiting, 3_000, 'the grantee');
      await lease.release();
      assert.not.ok(lease.signal.aborted, `the grantee's lease was not lost (${String(lease.signal.reason)})`);
      await eventually(() => order.length >= 3, 'both releases and the confirm seen by MONITOR');
      assert.equal(order, ['release', 'confirm by EVAL', 'release'], "the confirm runs before the grantee's release");
    } finally {
      monitor.disconnect();
    }
  });
});
