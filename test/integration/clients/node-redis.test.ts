// Issue 19: what relock does with a node-redis client passed in, where node-redis behaves unlike
// ioredis: a client not open, Redis down or frozen, an offline queue switched off, a connection reset
// while an acquire is out (node-redis fails it and never resends it), RESP3 with Buffer replies,
// close() and its races with an acquire, and a Redlock over clients of both families. The contract suites run over node-redis in
// `npm run test:clients`.
import * as assert from 'uvu/assert';
import { createClient, RESP_TYPES } from 'redis';
import { LockClient, LockError } from '../../../src/index.ts';
import { closeAtEveryOffset, hookReplies } from '../../helpers/close-race.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { exitsOnItsOwn, PACKAGE, RELOCK } from '../../helpers/child.ts';
import { startProxy } from '../../helpers/proxy.ts';
import { startPrivateRedis, type RedisServer } from '../../helpers/redis.ts';

const noop = () => undefined;
type NodeRedis = ReturnType<typeof createClient>;

/** A connected node-redis client to `server` (or any host:port), closed by the suite's after(). */
function opened(made: Set<NodeRedis>, at: { host: string; port: number }, options: Parameters<typeof createClient>[0] = {}): NodeRedis {
  const client = createClient({ ...options, socket: { host: at.host, port: at.port, reconnectStrategy: (retries) => Math.min(50 * (retries + 1), 500) } });
  client.on('error', noop);
  client.connect().catch(noop);
  made.add(client);
  return client;
}

async function timed<T>(promise: Promise<T>, limitMs: number, what: string): Promise<{ error: LockError; ms: number }> {
  const startedAt = performance.now();
  const error = (await within(rejects(promise), limitMs, what)) as LockError;
  return { error, ms: performance.now() - startedAt };
}

describe('LockClient over a node-redis client', (it) => {
  let server: RedisServer;
  const made = new Set<NodeRedis>();
  const clients = new Set<LockClient>();
  const lockClient = (redis: NodeRedis) => {
    const client = new LockClient({ redis, leaseMs: 3_000 });
    client.on('error', noop);
    clients.add(client);
    return client;
  };
  it.before(async () => {
    server = await startPrivateRedis();
  });
  it.after(async () => {
    await Promise.all([...clients].map((client) => client.close()));
    for (const client of made) if (client.isOpen) client.destroy();
    await server.stop();
  });

  it('refuses to use a client that is not open, saying to connect() it, and never opens it', async () => {
    const redis = createClient({ socket: { host: server.host, port: server.port } });
    const error = await rejects(lockClient(redis).lock(uniqueName()).tryAcquire());
    assert.instance(error, LockError);
    assert.is(error.code, 'ERR_LOCK_UNREACHABLE');
    assert.match(error.message, /not open: connect\(\) it/);
    assert.is(redis.isOpen, false);
  });

  it('locks with RESP3 and Buffer replies as with RESP2: tokens, holds, wake-ups', async () => {
    const redis = opened(made, server, { RESP: 3, commandOptions: { typeMapping: { [RESP_TYPES.BLOB_STRING]: Buffer } } });
    const client = lockClient(redis);
    const lock = client.lock(uniqueName());
    const lease = await lock.acquire();
    assert.type(lease.fencingToken, 'number');
    const nested = await lease.run(() => lock.acquire({ waitMs: 0 }));
    assert.is(nested.holdCount, 2);
    const waiting = lockClient(opened(made, server)).lock(lock.name).acquire({ waitMs: 5_000 });
    await nested.release();
    const startedAt = performance.now();
    await lease.release();
    const next = await waiting;
    assert.ok(performance.now() - startedAt < 1_000, 'woken by the release, not the 3 s lease');
    assert.ok(next.fencingToken > lease.fencingToken);
    await next.release();
  });

  it("close() leaves the user's client open, adds no 'error' listener to it, and closes relock's subscriber", async () => {
    const redis = opened(made, server);
    const listeners = redis.listenerCount('error');
    const client = lockClient(redis);
    const other = lockClient(opened(made, server));
    const name = uniqueName();
    const held = await other.lock(name).acquire();
    const waiting = client.lock(name).acquire();
    const subscribers = async () => Number((String(await redis.sendCommand(['CLIENT', 'LIST', 'TYPE', 'pubsub'])).match(/\n/g) ?? []).length);
    const before = await subscribers();
    assert.ok(before >= 1, 'a subscriber for the wait');
    await client.close();
    assert.instance(await rejects(waiting), Error);
    assert.is(redis.isOpen, true);
    assert.is(redis.listenerCount('error'), listeners);
    assert.is(String(await redis.sendCommand(['PING'])), 'PONG');
    await held.release();
    await eventually(async () => (await subscribers()) < before, "relock's subscriber gone");
  });

  it('gives back what an acquire cut by a connection reset took: node-redis fails it and never resends it', async () => {
    const proxy = await startProxy(server);
    const admin = server.connect();
    try {
      const client = new LockClient({ redis: opened(made, proxy), leaseMs: 30_000 });
      client.on('error', noop);
      clients.add(client);
      await (await client.lock(uniqueName()).acquire()).release(); // connected, scripts loaded
      const name = uniqueName();
      // The script reaches Redis and runs (the hold is taken, for 30 s); its reply is held, then the connection is reset.
      proxy.delay(0, 10_000);
      const attempt = client.lock(name).tryAcquire();
      await eventually(async () => (await admin.exists(`relock:{${name}}`)) === 1, 'the acquire ran on Redis');
      proxy.cut();
      proxy.pass();
      const error = await rejects(attempt);
      assert.is(error.code, 'ERR_LOCK_UNREACHABLE');
      // The give-back goes out once the client is back: the hold goes long before its 30 s lease.
      await eventually(async () => (await admin.exists(`relock:{${name}}`)) === 0, 'the hold given back', 5_000);
      const lease = await client.lock(name).acquire({ waitMs: 2_000 });
      await lease.release();
    } finally {
      admin.disconnect();
      await proxy.close();
    }
  });

  it('a client with its offline queue off: rejects with ERR_LOCK_UNREACHABLE at once while Redis is down', async () => {
    const down = await startPrivateRedis();
    const redis = opened(made, down, { disableOfflineQueue: true });
    await eventually(() => redis.isReady, 'connected'); // with no offline queue its owner must wait for it anyway
    const client = lockClient(redis);
    await (await client.lock(uniqueName()).acquire()).release();
    await down.kill();
    try {
      const { error, ms } = await timed(client.lock(uniqueName()).tryAcquire(), 5_000, 'tryAcquire with Redis down');
      assert.is(error.code, 'ERR_LOCK_UNREACHABLE');
      assert.ok(ms < 500, `settled after ${Math.round(ms)} ms`);
    } finally {
      await down.stop();
    }
  });
});

describe('LockClient#close over a node-redis client racing a contended acquire', (it) => {
  let server: RedisServer;
  it.before(async () => {
    server = await startPrivateRedis();
  });
  it.after(() => server.stop());

  it('opens nothing after close(): a process that closes its clients mid-acquire exits on its own', async () => {
    const other = new LockClient({ redis: server.url });
    const held = await other.lock(uniqueName()).acquire();
    try {
      const { code, output } = await exitsOnItsOwn(
        `
import { createRequire } from 'node:module';
import { LockClient } from ${RELOCK};
const { createClient } = createRequire(${PACKAGE})('redis');
const [url, name] = process.argv.slice(2);
const turns = async (n) => { for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve)); };
const redis = await createClient({ url }).connect();
for (let n = 0; n < 16; n++) {
  const client = new LockClient({ redis });
  const lock = client.lock(name);
  const acquiring = lock.acquire().catch(() => undefined);
  await turns(n);
  await client.close();
  await acquiring;
}
await redis.close();
console.log('done');
`,
        [server.url, held.name],
        8_000,
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
    const made = new Set<NodeRedis>();
    const redis = opened(made, server);
    const nextReply = hookReplies(redis, 'sendCommand', (args) => String((args[0] as string[])[0]) === 'EVALSHA');
    const other = new LockClient({ redis: server.url });
    const held = await other.lock(uniqueName()).acquire();
    let wrong: string[];
    try {
      wrong = await closeAtEveryOffset(() => new LockClient({ redis }), held.name, nextReply);
    } finally {
      await held.release();
      await other.close();
      redis.destroy();
    }
    assert.equal(wrong, [], 'every pending acquire rejects with the AbortError of close()');
  });
});

describe('node-redis client, Redis down or frozen', (it) => {
  const made = new Set<NodeRedis>();
  it.after(() => {
    for (const client of made) if (client.isOpen) client.destroy();
  });

  /** A LockClient over a node-redis client whose server was up (one lock taken) and is now killed. */
  async function wentDown() {
    const server = await startPrivateRedis();
    const client = new LockClient({ redis: opened(made, server) });
    client.on('error', noop);
    await (await client.lock(uniqueName()).acquire()).release();
    await server.kill();
    return { client, close: async () => (await client.close(), await server.stop()) };
  }

  it('tryAcquire() and acquire() reject with ERR_LOCK_UNREACHABLE within 2 s; acquire({ waitMs: 1000 }) by waitMs', async () => {
    const down = await wentDown();
    try {
      for (const [what, call] of [
        ['tryAcquire()', () => down.client.lock(uniqueName()).tryAcquire()],
        ['acquire()', () => down.client.lock(uniqueName()).acquire()],
      ] as const) {
        const { error, ms } = await timed(call(), 5_000, what);
        assert.is(error.code, 'ERR_LOCK_UNREACHABLE', what);
        assert.ok(ms < 2_000, `${what} settled after ${Math.round(ms)} ms`);
      }
      const { error, ms } = await timed(down.client.lock(uniqueName()).acquire({ waitMs: 1_000 }), 5_000, 'acquire({ waitMs })');
      assert.is(error.code, 'ERR_LOCK_UNREACHABLE');
      assert.match(error.message, /could not be reached/);
      assert.ok(ms >= 950 && ms < 2_100, `settled after ${Math.round(ms)} ms`);
    } finally {
      await down.close();
    }
  });

  it('a frozen Redis (SIGSTOP): tryAcquire() rejects with ERR_LOCK_UNREACHABLE after the 5 s answer deadline, not never', async () => {
    const server = await startPrivateRedis();
    const client = new LockClient({ redis: opened(made, server) });
    client.on('error', noop);
    try {
      await (await client.lock(uniqueName()).acquire()).release();
      server.pause();
      const { error, ms } = await timed(client.lock(uniqueName()).tryAcquire(), 9_000, 'tryAcquire on a frozen Redis');
      assert.is(error.code, 'ERR_LOCK_UNREACHABLE');
      assert.ok(ms >= 4_900 && ms < 7_000, `settled after ${Math.round(ms)} ms`);
    } finally {
      server.resume();
      await client.close();
      await server.stop();
    }
  }, 20_000);
});

describe('Redlock over clients of both families', (it) => {
  it('takes a majority over two node-redis clients and one ioredis client, and wakes a waiter', async () => {
    const servers = await Promise.all([0, 1, 2].map(() => startPrivateRedis()));
    const made = new Set<NodeRedis>();
    const mixed = () => [opened(made, servers[0]!), opened(made, servers[1]!), servers[2]!.connect()];
    const [a, b] = [new LockClient({ redis: mixed(), leaseMs: 3_000 }), new LockClient({ redis: mixed(), leaseMs: 3_000 })];
    try {
      const name = uniqueName();
      const lease = await a.lock(name).acquire();
      const waiting = b.lock(name).acquire({ waitMs: 5_000 });
      const startedAt = performance.now();
      setTimeout(() => void lease.release(), 100);
      const next = await waiting;
      assert.ok(performance.now() - startedAt < 1_500, 'woken by the release');
      assert.ok(next.fencingToken > lease.fencingToken);
      await next.release();
      for (const server of servers) assert.is(await server.connect().exists(`relock:{${name}}`), 0);
    } finally {
      await Promise.all([a.close(), b.close()]);
      for (const client of made) client.destroy();
      await Promise.all(servers.map((server) => server.stop()));
    }
  });
});
