// Issue 30, point 3: a give-back (a lock's, a fair waiter's leave, and a whole release) that could
// not be sent for want of a connection is sent again once the client is ready, until it lands or
// the lease has ended. Over a
// client of each family passed in that fails a command at once while it is down: ioredis with the
// offline queue off, node-redis with `disableOfflineQueue`, GLIDE (whose request timeout ends a
// command while a reconnection takes longer). A proxy between the client and a private Redis holds
// the acquire's reply and cuts the connection, and keeps new connections waiting for a while.
import * as assert from 'uvu/assert';
import { GlideClient, Logger } from '@valkey/valkey-glide';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { LockClient, LockError, type AnyRedisClient } from '../../../src/index.ts';
import { describe, eventually, rejects, uniqueName } from '../../helpers/describe.ts';
import { sleep } from '../../helpers/fixture.ts';
import { startProxy, type Proxy } from '../../helpers/proxy.ts';
import { startPrivateRedis, type RedisServer } from '../../helpers/redis.ts';

// GLIDE logs every error reply (relock's first EVALSHA's NOSCRIPT) at WARN on stdout by default.
Logger.setLoggerConfig('off');

const noop = () => undefined;
/** The lease of the orphaned hold: long, so that a hold left to expire shows. */
const LEASE_MS = 30_000;
/** How long another client waits for the lock: a give-back sent again lands long before; one never sent again leaves the lock held for the whole lease. */
const OTHER_WAIT_MS = 12_000;
/** How long new connections through the proxy are held after the cut: longer than GLIDE's request timeout below. */
const DOWN_MS = 1_500;

interface Family {
  readonly name: string;
  /** A client of the family through `proxy`, connected, and how to close it. */
  open(proxy: Proxy): Promise<{ redis: AnyRedisClient; close(): void }>;
}

const FAMILIES: readonly Family[] = [
  {
    name: 'ioredis, enableOfflineQueue: false',
    async open(proxy) {
      // maxRetriesPerRequest 0: a command out when the connection drops fails at once (else ioredis
      // resends it on the next connection, and the acquire gets its answer).
      const redis = new Redis({ ...proxy.options, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
      redis.on('error', noop);
      await once(redis, 'ready');
      return { redis: redis as unknown as AnyRedisClient, close: () => redis.disconnect() };
    },
  },
  {
    name: 'node-redis, disableOfflineQueue: true',
    async open(proxy) {
      const redis = createClient({ socket: { host: proxy.host, port: proxy.port }, disableOfflineQueue: true });
      redis.on('error', noop);
      await redis.connect();
      return { redis: redis as unknown as AnyRedisClient, close: () => redis.isOpen && redis.destroy() };
    },
  },
  {
    name: 'GLIDE, requestTimeout 500 ms',
    async open(proxy) {
      const redis = await GlideClient.createClient({ addresses: [{ host: proxy.host, port: proxy.port }], requestTimeout: 500 });
      return { redis: redis as unknown as AnyRedisClient, close: () => redis.close() };
    },
  },
];

describe('A give-back or release that could not be sent is sent again (issue 30, point 3)', (it) => {
  let server: RedisServer;
  const closers: (() => unknown)[] = [];
  it.before(async () => {
    server = await startPrivateRedis();
  });
  it.after(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    await server.stop();
  });

  /** A LockClient over a fresh client of `family` behind a fresh proxy, and another one straight to the server. */
  async function setupFor(family: Family) {
    const proxy = await startProxy({ host: server.host, port: server.port });
    const { redis, close } = await family.open(proxy);
    const client = new LockClient({ redis, leaseMs: LEASE_MS });
    client.on('error', noop);
    const other = new LockClient({ redis: server.url });
    closers.push(() => proxy.close(), close, () => client.close(), () => other.close());
    // The scripts are loaded (the first EVALSHA's NOSCRIPT is answered) before replies are held.
    await (await client.lock(uniqueName()).acquire()).release();
    return { proxy, client, other };
  }

  /** Cuts every connection through the proxy and holds new ones for DOWN_MS. */
  async function outage(proxy: Proxy): Promise<void> {
    proxy.cut();
    proxy.blackhole();
    await sleep(DOWN_MS);
    proxy.pass();
  }

  it('stops sending a release again once its lease has ended on Redis, and at close()', async () => {
    // ioredis with the offline queue off, behind a proxy that stays down: every sending fails at once.
    const proxy = await startProxy({ host: server.host, port: server.port });
    const { redis, close } = await FAMILIES[0]!.open(proxy);
    closers.push(() => proxy.close(), close);
    let sent = 0;
    const ioredis = redis as unknown as { evalsha(...args: unknown[]): Promise<unknown> };
    const evalsha = ioredis.evalsha.bind(redis);
    ioredis.evalsha = (...args) => (sent++, evalsha(...args));
    const count = async (leaseMs: number, end: (client: LockClient) => Promise<void>) => {
      if ((redis as unknown as Redis).status !== 'ready') await once(redis as unknown as Redis, 'ready');
      const client = new LockClient({ redis, leaseMs });
      client.on('error', noop);
      closers.push(() => client.close());
      await (await client.lock(uniqueName()).acquire()).release();
      const lease = await client.lock(uniqueName()).acquire();
      proxy.cut();
      proxy.blackhole();
      assert.is(((await rejects(lease.release())) as LockError).code, 'ERR_LOCK_UNREACHABLE');
      const before = sent;
      await end(client);
      const after = sent;
      await sleep(2_500);
      proxy.pass();
      return { resent: after - before, later: sent - after };
    };
    // A 1.5 s lease: sent again while it lasts, then no more.
    const lease = await count(1_500, async () => void (await sleep(2_000)));
    assert.ok(lease.resent >= 1, 'sent again while the lease lasted');
    assert.is(lease.later, 0, 'nothing sent after the lease ended');
    // A 30 s lease, the client closed: no more either.
    const closed = await count(30_000, async (client) => {
      await sleep(500);
      await client.close();
    });
    assert.is(closed.later, 0, 'nothing sent after close()');
  }, 30_000);

  it('Redisson layout: a fair waiter whose leave could not be sent leaves RFairLock\'s queue once the client is ready again', async () => {
    const proxy = await startProxy({ host: server.host, port: server.port });
    const { redis, close } = await FAMILIES[0]!.open(proxy);
    const client = new LockClient({ redis, layout: 'redisson', leaseMs: LEASE_MS });
    client.on('error', noop);
    const other = new LockClient({ redis: server.url, layout: 'redisson' });
    closers.push(() => proxy.close(), close, () => client.close(), () => other.close());
    const name = uniqueName();
    const queue = `redisson_lock_queue:{${name}}`;
    const admin = server.connect();
    closers.push(() => admin.disconnect());
    const holder = await other.fairLock(name).acquire();
    const waiting = rejects(client.fairLock(name).acquire({ waitMs: 1_000 }));
    await eventually(async () => (await admin.llen(queue)) === 1, 'the waiter queued');
    proxy.cut();
    proxy.blackhole();
    await waiting; // its wait ended while the client was down: the leave could not be sent
    await sleep(500);
    assert.is(await admin.llen(queue), 1, 'still queued while the client is down');
    proxy.pass();
    // Before: the entry stayed until its Redisson deadline (the holder's lease plus 5 min), holding
    // up every waiter behind it, Java's too.
    await eventually(async () => (await admin.llen(queue)) === 0, 'left the queue once the client was back', 5_000);
    await holder.release();
  }, 20_000);

  for (const family of FAMILIES) {
    it(`${family.name}: an acquire whose reply was lost in a reset is given back once the client is ready again`, async () => {
      const { proxy, client, other } = await setupFor(family);
      const name = uniqueName();
      const admin = server.connect();
      // Replies are held: the acquire's script runs on Redis, its answer never arrives.
      proxy.delay(0, 60_000);
      const acquiring = rejects(client.lock(name).acquire({ waitMs: 0 }));
      await eventually(async () => (await admin.exists(`relock:{${name}}`)) === 1, 'the acquire ran on Redis');
      const cut = outage(proxy);
      const error = (await acquiring) as LockError;
      assert.instance(error, LockError);
      assert.is(error.code, 'ERR_LOCK_UNREACHABLE', error.message);
      await cut;
      // Before: the hold nobody owns stayed for the whole 30 s lease, and this wait timed out.
      const lease = await other.lock(name).acquire({ waitMs: OTHER_WAIT_MS });
      await lease.release();
    }, 40_000);

    it(`${family.name}: a fair lock's try whose reply was lost in a reset is given back (its leave) once the client is ready again`, async () => {
      const { proxy, client, other } = await setupFor(family);
      const name = uniqueName();
      const admin = server.connect();
      await (await client.fairLock(name).acquire()).release();
      proxy.delay(0, 60_000);
      const acquiring = rejects(client.fairLock(name).acquire({ waitMs: 0 }));
      await eventually(async () => (await admin.exists(`relock:{${name}}:fair`)) === 1, 'the acquire ran on Redis');
      const cut = outage(proxy);
      const error = (await acquiring) as LockError;
      assert.is(error.code, 'ERR_LOCK_UNREACHABLE', error.message);
      await cut;
      // Before: the hold nobody owns stayed for the whole 30 s lease.
      const lease = await other.fairLock(name).acquire({ waitMs: OTHER_WAIT_MS });
      await lease.release();
    }, 40_000);

    it(`${family.name}: a whole release that failed for want of a connection is sent again once the client is ready`, async () => {
      const { proxy, client, other } = await setupFor(family);
      const name = uniqueName();
      const lease = await client.lock(name).acquire();
      proxy.cut();
      proxy.blackhole();
      const error = (await rejects(lease.release())) as LockError;
      assert.instance(error, LockError);
      assert.is(error.code, 'ERR_LOCK_UNREACHABLE', error.message);
      await sleep(DOWN_MS);
      proxy.pass();
      // Renewal stopped with the release: before, the lock stayed held until its 30 s lease ended.
      const next = await other.lock(name).acquire({ waitMs: OTHER_WAIT_MS });
      await next.release();
      // The caller may call release() again: relock's resend released it already.
      await lease.release();
    }, 40_000);
  }
});
