// Issue 19 (point 4): what relock does with a GLIDE 2 client passed in, where GLIDE behaves unlike
// ioredis and node-redis: server errors rewritten by GLIDE (NOSCRIPT, WRONGTYPE), maps as
// `[{ key, value }]`, every command bounded by the client's requestTimeout, a connection reset that
// fails the command out (never resent), relock's own subscriber created from the client's
// configuration (credentials, database, RESP2, Buffer decoding) and a connection it lost noticed,
// close() and its races, a client relock cannot use refused before any I/O. The contract suites,
// Redlock, Cluster and the short faults run over GLIDE in `npm run test:clients`.
import * as assert from 'uvu/assert';
import { GlideClient, Logger, type GlideClientConfiguration } from '@valkey/valkey-glide';
import { LockClient, LockError } from '../../../src/index.ts';
import { closeAtEveryOffset, hookReplies } from '../../helpers/close-race.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { exitsOnItsOwn, PACKAGE, RELOCK } from '../../helpers/child.ts';
import { commandStats } from '../../helpers/fixture.ts';
import { startProxy } from '../../helpers/proxy.ts';
import { startPrivateRedis, type RedisServer } from '../../helpers/redis.ts';

// GLIDE logs every error reply (relock's first EVALSHA's NOSCRIPT) at WARN on stdout by default.
Logger.setLoggerConfig('off');

const noop = () => undefined;

async function timed<T>(promise: Promise<T>, limitMs: number, what: string): Promise<{ error: LockError; ms: number }> {
  const startedAt = performance.now();
  const error = (await within(rejects(promise), limitMs, what)) as LockError;
  return { error, ms: performance.now() - startedAt };
}

/** A GLIDE client to `at`, closed by `made`'s owner. */
async function glide(made: Set<GlideClient>, at: { host: string; port: number }, options: Partial<GlideClientConfiguration> = {}): Promise<GlideClient> {
  const client = await GlideClient.createClient({ addresses: [{ host: at.host, port: at.port }], ...options });
  made.add(client);
  return client;
}

/** How many pub/sub connections the server has. */
const subscribers = async (server: RedisServer) => Number((String(await server.connect().call('CLIENT', 'LIST', 'TYPE', 'pubsub')).match(/\n/g) ?? []).length);

describe('LockClient over a GLIDE client', (it) => {
  let server: RedisServer;
  const made = new Set<GlideClient>();
  const clients = new Set<LockClient>();
  const lockClient = (redis: GlideClient, leaseMs = 3_000) => {
    const client = new LockClient({ redis, leaseMs });
    client.on('error', noop);
    clients.add(client);
    return client;
  };
  it.before(async () => {
    server = await startPrivateRedis({ args: ['--requirepass', 'sesame'], connectOptions: { password: 'sesame' } });
  });
  it.after(async () => {
    await Promise.all([...clients].map((client) => client.close()));
    for (const client of made) client.close();
    await server.stop();
  });
  const secret = { credentials: { password: 'sesame' } };

  it("locks and wakes through relock's own subscriber, made with the client's credentials and database, from a RESP2 client decoding Buffers", async () => {
    // GLIDE's pub/sub needs RESP3 and relock reads strings: the subscriber gets both whatever the client says.
    const redis = await glide(made, server, { ...secret, databaseId: 3, protocol: 1 as never, defaultDecoder: 0 as never });
    const client = lockClient(redis);
    const lock = client.lock(uniqueName());
    const lease = await lock.acquire();
    assert.type(lease.fencingToken, 'number');
    const db3 = server.connect();
    await db3.select(3);
    assert.is(await db3.exists(`relock:{${lock.name}}`), 1, 'the lock in database 3');
    assert.is(await server.connect().exists(`relock:{${lock.name}}`), 0, 'database 0 untouched');
    const waiting = lockClient(await glide(made, server, { ...secret, databaseId: 3 })).lock(lock.name).acquire({ waitMs: 5_000 });
    await eventually(async () => (await subscribers(server)) >= 1, 'a subscriber for the wait');
    const startedAt = performance.now();
    await lease.release();
    const next = await waiting;
    assert.ok(performance.now() - startedAt < 1_000, 'woken by the release, not the 3 s lease');
    assert.ok(next.fencingToken > lease.fencingToken);
    await next.release();
  });

  it("reads the server's replies as it sent them: NOSCRIPT after SCRIPT FLUSH, WRONGTYPE, the eviction policy from a RESP3 map", async () => {
    const admin = server.connect();
    const redis = await glide(made, server, secret);
    const client = lockClient(redis);
    const warnings: LockError[] = [];
    client.on('warning', (warning: LockError) => warnings.push(warning));
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      await (await client.lock(uniqueName()).acquire()).release();
      await admin.script('FLUSH');
      await (await client.lock(uniqueName()).acquire()).release();
      const name = uniqueName();
      await admin.set(`relock:{${name}}`, 'not a lock');
      assert.is((await rejects(client.lock(name).acquire())).code, 'ERR_LOCK_WRONG_TYPE');
      await eventually(() => warnings.some((warning) => warning.code === 'ERR_LOCK_EVICTION_POLICY'), 'the eviction warning', 2_000);
      assert.match(warnings.find((warning) => warning.code === 'ERR_LOCK_EVICTION_POLICY')!.message, /"allkeys-lru"/);
    } finally {
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
    }
  });

  it("close() leaves the user's client open and closes relock's subscriber", async () => {
    const redis = await glide(made, server, secret);
    const client = lockClient(redis);
    const name = uniqueName();
    const held = await lockClient(await glide(made, server, secret)).lock(name).acquire();
    const before = await subscribers(server);
    const waiting = client.lock(name).acquire();
    await eventually(async () => (await subscribers(server)) > before, "relock's subscriber connected");
    await client.close();
    assert.instance(await rejects(waiting), Error);
    assert.is(await redis.customCommand(['PING']), 'PONG');
    await held.release();
    await eventually(async () => (await subscribers(server)) === before, "relock's subscriber gone");
  });

  it('gives back what an acquire cut by a connection reset took: GLIDE fails it and never resends it', async () => {
    const proxy = await startProxy(server);
    const admin = server.connect();
    try {
      const client = lockClient(await glide(made, proxy, { ...secret, requestTimeout: 15_000 }), 30_000);
      await (await client.lock(uniqueName()).acquire()).release(); // connected, scripts loaded
      const name = uniqueName();
      // The script reaches Redis and runs (the hold is taken, for 30 s); its reply is held, then the connection is reset.
      proxy.delay(0, 10_000);
      const attempt = client.lock(name).tryAcquire();
      await eventually(async () => (await admin.exists(`relock:{${name}}`)) === 1, 'the acquire ran on Redis');
      proxy.cut();
      proxy.pass();
      const error = await within(rejects(attempt), 2_000, 'the cut acquire');
      assert.is(error.code, 'ERR_LOCK_UNREACHABLE');
      assert.match(error.message, /ConnectionError|connection/i);
      await eventually(async () => (await admin.exists(`relock:{${name}}`)) === 0, 'the hold given back', 5_000);
      const lease = await client.lock(name).acquire({ waitMs: 2_000 });
      await lease.release();
    } finally {
      await proxy.close();
    }
  });

  it('a waiter whose subscriber lost its connection (and the release with it) tries again once GLIDE reconnected, not after the lease', async () => {
    const proxy = await startProxy(server);
    try {
      const holder = lockClient(await glide(made, server, secret), 20_000);
      const name = uniqueName();
      const lease = await holder.lock(name).acquire();
      const waiter = lockClient(await glide(made, proxy, secret));
      const before = await subscribers(server);
      const waiting = waiter.lock(name).acquire({ waitMs: 15_000 });
      await eventually(async () => (await subscribers(server)) > before && waiter.waiting === 1, 'the waiter subscribed');
      // The release is published while everything through the proxy is held, then those connections are cut: its message is lost.
      proxy.blackhole();
      await lease.release();
      await new Promise((resolve) => setTimeout(resolve, 300));
      proxy.cut();
      proxy.pass();
      const startedAt = performance.now();
      const next = await within(waiting, 10_000, 'the waiter');
      assert.ok(performance.now() - startedAt < 5_000, `acquired ${Math.round(performance.now() - startedAt)} ms after the reset, not after the 20 s lease`);
      await next.release();
    } finally {
      await proxy.close();
    }
  });

  it('refuses a GLIDE client without dynamic subscriptions (GLIDE 1.x, 2.0-2.2) with a TypeError naming `redis` and 2.3, before any I/O', async () => {
    const redis = await glide(made, server, secret);
    const admin = server.connect();
    const calls = (await commandStats(admin)).evalsha ?? 0;
    Object.defineProperty(redis, 'subscribeLazy', { value: undefined });
    assert.throws(() => new LockClient({ redis }), (error: Error) => error instanceof TypeError && /`redis`/.test(error.message) && /2\.3 or later/.test(error.message));
    assert.is((await commandStats(admin)).evalsha ?? 0, calls);
  });
});

describe('GLIDE client, Redis down or frozen', (it) => {
  const made = new Set<GlideClient>();
  it.after(() => {
    for (const client of made) client.close();
  });

  it("tryAcquire() and acquire() reject with ERR_LOCK_UNREACHABLE after the client's requestTimeout (250 ms by default); acquire({ waitMs: 1000 }) by waitMs; locks again once Redis is back", async () => {
    const server = await startPrivateRedis();
    const client = new LockClient({ redis: await glide(made, server) });
    client.on('error', noop);
    try {
      await (await client.lock(uniqueName()).acquire()).release();
      await server.kill();
      for (const [what, call] of [
        ['tryAcquire()', () => client.lock(uniqueName()).tryAcquire()],
        ['acquire()', () => client.lock(uniqueName()).acquire()],
      ] as const) {
        const { error, ms } = await timed(call(), 5_000, what);
        assert.is(error.code, 'ERR_LOCK_UNREACHABLE', what);
        assert.ok(ms < 1_500, `${what} settled after ${Math.round(ms)} ms`);
      }
      const { error, ms } = await timed(client.lock(uniqueName()).acquire({ waitMs: 1_000 }), 5_000, 'acquire({ waitMs })');
      assert.is(error.code, 'ERR_LOCK_UNREACHABLE');
      assert.ok(ms >= 950 && ms < 2_100, `settled after ${Math.round(ms)} ms`);
      // GLIDE reconnects by itself and says nothing: relock's PING finds the server back.
      await server.restart();
      const lease = await within(client.lock(uniqueName()).acquire({ waitMs: 3_000 }), 5_000, 'an acquire once Redis is back');
      await lease.release();
    } finally {
      await client.close();
      await server.stop();
    }
  });

  it('a frozen Redis (SIGSTOP): tryAcquire() rejects with ERR_LOCK_UNREACHABLE after the requestTimeout (1 s here), not never', async () => {
    const server = await startPrivateRedis();
    const client = new LockClient({ redis: await glide(made, server, { requestTimeout: 1_000 }) });
    client.on('error', noop);
    try {
      await (await client.lock(uniqueName()).acquire()).release();
      server.pause();
      const { error, ms } = await timed(client.lock(uniqueName()).tryAcquire(), 5_000, 'tryAcquire on a frozen Redis');
      assert.is(error.code, 'ERR_LOCK_UNREACHABLE');
      assert.ok(ms >= 950 && ms < 2_500, `settled after ${Math.round(ms)} ms`);
    } finally {
      server.resume();
      await client.close();
      await server.stop();
    }
  });
});

describe('LockClient#close over a GLIDE client racing a contended acquire', (it) => {
  let server: RedisServer;
  it.before(async () => {
    server = await startPrivateRedis();
  });
  it.after(() => server.stop());

  it("opens nothing after close(): a process that closes its clients mid-acquire exits on its own (relock's GLIDE subscribers closed)", async () => {
    const other = new LockClient({ redis: server.url });
    const held = await other.lock(uniqueName()).acquire();
    try {
      const { code, output } = await exitsOnItsOwn(
        `
import { createRequire } from 'node:module';
import { LockClient } from ${RELOCK};
const { GlideClient, Logger } = createRequire(${PACKAGE})('@valkey/valkey-glide');
Logger.setLoggerConfig('off');
const [port, name] = process.argv.slice(2);
const turns = async (n) => { for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve)); };
const redis = await GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port: Number(port) }] });
for (let n = 0; n < 16; n++) {
  const client = new LockClient({ redis });
  const lock = client.lock(name);
  const acquiring = lock.acquire().catch(() => undefined);
  await turns(n * 50);
  await client.close();
  await acquiring;
}
redis.close();
console.log('done');
`,
        [String(server.port), held.name],
        10_000,
        'the child process',
      );
      assert.is(code, 0, output);
      assert.match(output, /done/);
    } finally {
      await held.release();
      await other.close();
    }
  });

  it("rejects an acquire that close() interrupts with close()'s AbortError, at every offset 0..15 microtasks after the attempt's reply", async () => {
    const made = new Set<GlideClient>();
    const redis = await glide(made, server);
    const nextReply = hookReplies(redis, 'customCommand', (args) => String((args[0] as string[])[0]) === 'EVALSHA');
    const other = new LockClient({ redis: server.url });
    const held = await other.lock(uniqueName()).acquire();
    let wrong: string[];
    try {
      wrong = await closeAtEveryOffset(() => new LockClient({ redis }), held.name, nextReply);
    } finally {
      await held.release();
      await other.close();
      redis.close();
    }
    assert.equal(wrong, [], 'every pending acquire rejects with the AbortError of close()');
  });
});
