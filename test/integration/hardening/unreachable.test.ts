// Issue 7, section 2: an unreachable or misconfigured Redis fails fast and says so. Against private
// redis-servers that are killed for real, ACL users, a latency proxy, and a child process for the
// close() race.
import * as assert from 'uvu/assert';
import { once } from 'node:events';
import { Redis } from 'ioredis';
import { LockClient, LockError, type LockClientOptions, type LockErrorCode } from '../../../src/index.ts';
import { createRelockUser } from '../../helpers/acl.ts';
import { closeAtEveryOffset, hookReplies } from '../../helpers/close-race.ts';
import { applicableOnly, describe, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { exitsOnItsOwn, PACKAGE, RELOCK } from '../../helpers/child.ts';
import { collectUntil } from '../../helpers/gc.ts';
import { redisFor, setup, sleep, TEST_CLIENT } from '../../helpers/fixture.ts';
import { startProxy } from '../../helpers/proxy.ts';
import type { Closable } from '../../helpers/clients.ts';
import { freePort, startPrivateRedis, startReplicaOf, type RedisServer } from '../../helpers/redis.ts';

const noop = () => undefined;
const lockKey = (name: string) => `relock:{${name}}`;

/** A LockClient on a private server that was up (the client connected and locked once) and is now killed. */
async function wentDown(options: (url: string, host: string, port: number) => LockClientOptions) {
  const server = await startPrivateRedis();
  const client = new LockClient(options(server.url, server.host, server.port));
  client.on('error', noop);
  await (await client.lock(uniqueName()).acquire()).release();
  await server.kill();
  return {
    client,
    async close() {
      await client.close();
      await server.stop();
    },
  };
}

/** How long `promise` takes to reject, and with what; fails when it takes longer than `limitMs`. */
async function timedFailure(promise: Promise<unknown>, limitMs: number, what: string): Promise<{ error: LockError; ms: number }> {
  const startedAt = performance.now();
  const error = (await within(rejects(promise), limitMs, what)) as LockError;
  return { error, ms: performance.now() - startedAt };
}

function assertUnreachable(error: LockError, what: string): void {
  assert.instance(error, LockError, `${what}: a LockError (got ${String(error)})`);
  assert.is(error.code, 'ERR_LOCK_UNREACHABLE', `${what}: code`);
  assert.instance(error.cause, Error, `${what}: the connection error is the cause`);
  assert.not.instance(error.cause, LockError);
  assert.match((error.cause as Error).message, /ECONNREFUSED|max retries|connect|Connection|reconnecting/i);
}

describe('Connection settings of a user client or options (issue 7, 2.1)', (it) => {
  const s = setup(it);
  const settings: [string, { enableOfflineQueue?: boolean; maxRetriesPerRequest?: number }][] = [
    ['enableOfflineQueue: false', { enableOfflineQueue: false }],
    ['maxRetriesPerRequest: 0', { maxRetriesPerRequest: 0 }],
    ['enableOfflineQueue: false and maxRetriesPerRequest: 0', { enableOfflineQueue: false, maxRetriesPerRequest: 0 }],
  ];

  /** A contended acquire: waits for the holder (subscriber, queue), is woken by its release. */
  async function contended(client: LockClient, waitMs: number | undefined): Promise<void> {
    const lock = client.lock(uniqueName());
    const held = await s.other.lock(lock.name).acquire();
    const waiting = lock.acquire(waitMs === undefined ? {} : { waitMs });
    waiting.catch(noop);
    await sleep(100);
    await held.release();
    const lease = await within(waiting, 3_000, 'the contended acquire');
    await lease.release();
  }

  for (const [label, options] of settings) {
    it(`a client passed in with ${label} waits and is woken from its first contended acquire`, async () => {
      const redis = new Redis({ host: s.f.server.host, port: s.f.server.port, ...options });
      redis.on('error', noop);
      await once(redis, 'ready'); // with enableOfflineQueue false its owner must wait for it anyway
      const client = new LockClient({ redis });
      try {
        await contended(client, undefined);
        await contended(client, 3_000);
      } finally {
        await client.close();
        redis.disconnect();
      }
    });

    it(`ioredis options with ${label} wait and are woken from the first contended acquire`, async () => {
      const client = s.f.client({ redis: { host: s.f.server.host, port: s.f.server.port, ...options } });
      client.on('error', noop);
      await contended(client, undefined); // the very first command: no waitMs to ride out a failure
      await contended(client, 3_000);
    });
  }
});

describe('Redis down (issue 7, 2.2)', (it) => {
  // Connections relock makes (from a URL or ioredis options) get fail-fast defaults: a command fails
  // after two reconnection attempts, about 0.3 s when the port refuses.
  const made: [string, (url: string, host: string, port: number) => LockClientOptions][] = [
    ['a client made from a URL', (url) => ({ redis: url })],
    ['a client made from ioredis options', (_, host, port) => ({ redis: { host, port } })],
  ];
  for (const [label, options] of made) {
    it(`tryAcquire() rejects with ERR_LOCK_UNREACHABLE within 2 s (${label})`, async () => {
      const down = await wentDown(options);
      try {
        const { error, ms } = await timedFailure(down.client.lock(uniqueName()).tryAcquire(), 5_000, 'tryAcquire with Redis down');
        assertUnreachable(error, 'tryAcquire()');
        assert.ok(ms < 2_000, `settled after ${Math.round(ms)} ms`);
      } finally {
        await down.close();
      }
    });

    it(`acquire({ waitMs: 1000 }) rejects by waitMs with ERR_LOCK_UNREACHABLE, not a bare timeout (${label})`, async () => {
      const down = await wentDown(options);
      try {
        const { error, ms } = await timedFailure(down.client.lock(uniqueName()).acquire({ waitMs: 1_000 }), 5_000, 'acquire({ waitMs }) with Redis down');
        assertUnreachable(error, 'acquire({ waitMs })');
        assert.match(error.message, /could not be reached/);
        assert.ok(ms >= 950 && ms < 1_600, `settled after ${Math.round(ms)} ms`);
      } finally {
        await down.close();
      }
    });

    it(`acquire() with no waitMs rejects with ERR_LOCK_UNREACHABLE instead of waiting for ever (${label})`, async () => {
      const down = await wentDown(options);
      try {
        const { error, ms } = await timedFailure(down.client.lock(uniqueName()).acquire(), 5_000, 'acquire() with Redis down');
        assertUnreachable(error, 'acquire()');
        assert.ok(ms < 2_000, `settled after ${Math.round(ms)} ms`);
      } finally {
        await down.close();
      }
    });
  }

  it('tryAcquire() rejects with ERR_LOCK_UNREACHABLE within 2 s when Redis was never there (nothing listens)', async () => {
    const client = new LockClient({ redis: `redis://127.0.0.1:${await freePort()}` });
    client.on('error', noop);
    try {
      const { error, ms } = await timedFailure(client.lock(uniqueName()).tryAcquire(), 5_000, 'tryAcquire, nothing listening');
      assertUnreachable(error, 'tryAcquire()');
      assert.ok(ms < 2_000, `settled after ${Math.round(ms)} ms`);
    } finally {
      await client.close();
    }
  });

  // Issue 31, point 5: a wait rides out connection failures; when it ends, its error must say what
  // failed underneath (the port refused, the host does not exist), not that ioredis gave up retrying.
  const never: [string, () => Promise<string>, RegExp][] = [
    ['a port nothing listens on', async () => `redis://127.0.0.1:${await freePort()}`, /^ECONNREFUSED$/],
    // .invalid never resolves (RFC 6761); a resolver that cannot be asked says EAI_AGAIN.
    ['a host name that does not exist', async () => `redis://relock-no-such-host.invalid:6379`, /^(ENOTFOUND|EAI_AGAIN)$/],
  ];
  for (const [label, url, code] of never) {
    for (const waitMs of [undefined, 1_000]) {
      it(`acquire(${waitMs === undefined ? '' : `{ waitMs: ${waitMs} }`}) on ${label}: the connection's own error is the cause and is in the message`, async () => {
        const client = new LockClient({ redis: await url() });
        client.on('error', noop);
        try {
          const { error } = await timedFailure(client.lock(uniqueName()).acquire(waitMs === undefined ? {} : { waitMs }), 10_000, `acquire on ${label}`);
          assert.instance(error, LockError);
          assert.is(error.code, 'ERR_LOCK_UNREACHABLE');
          const cause = error.cause as NodeJS.ErrnoException;
          assert.match(String(cause.code), code, `the cause's code (cause: ${cause.message})`);
          assert.ok(error.message.includes(cause.code!), `the message names ${cause.code}: ${error.message}`);
          assert.not.match(error.message, /max retries/i);
        } finally {
          await client.close();
        }
      });
    }
  }

  // A client passed in keeps its own settings: relock neither changes nor listens to it. Its commands
  // fail when ioredis gives up on them: with ioredis defaults (maxRetriesPerRequest 20) a command
  // waits for 21 reconnection attempts, so tryAcquire() and acquire() without waitMs reject with
  // ERR_LOCK_UNREACHABLE only after about 12 s on ioredis 5 (retries min(n * 50, 2000) ms apart) and
  // over a minute on ioredis 6 (exponential, up to 5 s apart); `maxRetriesPerRequest` or
  // `commandTimeout` on that client shorten it. acquire({ waitMs }) ends by waitMs whatever its settings.
  it('a client passed in with ioredis defaults: acquire({ waitMs: 800 }) still rejects by waitMs with ERR_LOCK_UNREACHABLE', async () => {
    const down = await wentDown((url) => {
      const redis = new Redis(url);
      redis.on('error', noop);
      return { redis };
    });
    try {
      const { error, ms } = await timedFailure(down.client.lock(uniqueName()).acquire({ waitMs: 800 }), 5_000, 'acquire({ waitMs }) on a user client');
      assert.instance(error, LockError);
      assert.is(error.code, 'ERR_LOCK_UNREACHABLE');
      assert.instance(error.cause, Error);
      assert.ok(ms >= 750 && ms < 1_400, `settled after ${Math.round(ms)} ms`);
    } finally {
      await down.close();
    }
  });

  it('a client passed in with maxRetriesPerRequest: 1: tryAcquire() rejects with ERR_LOCK_UNREACHABLE as soon as ioredis gives up', async () => {
    const down = await wentDown((url) => {
      const redis = new Redis(url, { maxRetriesPerRequest: 1 });
      redis.on('error', noop);
      return { redis };
    });
    try {
      const { error, ms } = await timedFailure(down.client.lock(uniqueName()).tryAcquire(), 5_000, 'tryAcquire on a user client');
      assert.instance(error, LockError);
      assert.is(error.code, 'ERR_LOCK_UNREACHABLE');
      assert.instance(error.cause, Error);
      assert.ok(ms < 2_000, `settled after ${Math.round(ms)} ms`);
    } finally {
      await down.close();
    }
  });
});

/** How one failure kind is produced for real, and the LockError (or warning) it gives. */
type Produce = () => Promise<unknown>;

describe('A node that answers it cannot serve now: a former master, now a replica (READONLY)', (all) => {
  // GLIDE's standalone client refuses an address list with no primary ("No primary node found")
  // before it sends anything: it never talks to a lone replica.
  const it = Object.assign(applicableOnly(all, TEST_CLIENT !== 'glide', 'a client that connects to a lone replica (GLIDE refuses one)'), { before: all.before, after: all.after });
  // What a client still pointed at the old master sees after a failover (Sentinel, a Cluster before
  // its slot map is read again): the script runs, its first write is refused, nothing was written.
  // Like CLUSTERDOWN, TRYAGAIN, LOADING and MASTERDOWN, it is "not reached", not an answer to pass on.
  let primary: RedisServer;
  let replica: RedisServer;
  const connections = new Set<Closable>();
  const clients: LockClient[] = [];
  const onReplica = () => {
    const client = new LockClient({ redis: redisFor(replica.url, connections) });
    client.on('error', noop);
    clients.push(client);
    return client;
  };
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

  it('acquire() rejects with ERR_LOCK_UNREACHABLE, the READONLY reply as cause, and nothing is held (lock, semaphore)', async () => {
    const client = onReplica();
    const name = uniqueName();
    for (const [what, acquire] of [
      ['lock', () => client.lock(name).acquire()],
      ['semaphore', () => client.semaphore(name, { permits: 2 }).acquire()],
    ] as const) {
      const error = (await within(rejects(acquire()), 5_000, what)) as LockError;
      assert.instance(error, LockError, `${what}: a LockError (got ${String(error)})`);
      assert.is(error.code, 'ERR_LOCK_UNREACHABLE', `${what}: code`);
      assert.match((error.cause as Error).message, /^READONLY/, `${what}: the reply is the cause`);
    }
    assert.equal(await primary.connect().keys(`*${name}*`), [], 'nothing written');
  });

  it('acquire({ waitMs }) rides it out: the replica promoted during the wait, the lock is taken there', async () => {
    const client = onReplica();
    const name = uniqueName();
    const acquiring = client.lock(name).acquire({ waitMs: 8_000 });
    await sleep(300);
    await replica.connect().call('REPLICAOF', 'NO', 'ONE');
    const lease = await within(acquiring, 10_000, 'acquire across the promotion');
    assert.is(await replica.connect().exists(lockKey(name)), 1, 'held on the promoted server');
    await lease.release();
    assert.is(await replica.connect().exists(lockKey(name)), 0, 'released');
  });
});

describe('Error codes: one per failure kind (issue 7, 2.3)', (it) => {
  const s = setup(it, {}, {}, { private: true });

  /**
   * Every code but the catch-all ERR_LOCK, each produced for real; the type makes the table complete.
   * ERR_LOCK_UNSUPPORTED needs a Redis Cluster older than Redis 7: test/integration/cluster/legacy.test.ts.
   * ERR_LOCK_NO_SCRIPTING needs a server without Lua: test/integration/server/no-scripting.test.ts.
   */
  const table: Record<Exclude<LockErrorCode, 'ERR_LOCK' | 'ERR_LOCK_UNSUPPORTED' | 'ERR_LOCK_NO_SCRIPTING'>, [how: string, produce: Produce]> = {
    ERR_LOCK_TIMEOUT: [
      'acquire({ waitMs }) while another client holds the lock',
      async () => {
        const name = uniqueName();
        const held = await s.other.lock(name).acquire();
        const error = await rejects(s.client.lock(name).acquire({ waitMs: 50 }));
        await held.release();
        return error;
      },
    ],
    ERR_LOCK_NOT_HELD: [
      'release() of a lease force-unlocked behind its back',
      async () => {
        const lock = s.client.lock(uniqueName());
        const lease = await lock.acquire();
        await s.other.lock(lock.name).forceUnlock();
        return rejects(lease.release());
      },
    ],
    ERR_LOCK_LOST: [
      'runExclusive() whose hold is force-unlocked while fn runs',
      async () => {
        const lock = s.client.lock(uniqueName());
        return rejects(lock.runExclusive(() => s.other.lock(lock.name).forceUnlock()));
      },
    ],
    ERR_LOCK_MAX_HOLD: [
      "lease.signal's reason, a lease held past acquire({ maxHoldMs })",
      async () => {
        const lock = s.client.lock(uniqueName());
        const lease = await lock.acquire({ maxHoldMs: 100 });
        await new Promise((resolve) => lease.signal.addEventListener('abort', resolve, { once: true }));
        await lease.release();
        return lease.signal.reason;
      },
    ],
    ERR_LOCK_UNREACHABLE: [
      'tryAcquire() when nothing listens on the port',
      async () => {
        const client = new LockClient({ redis: `redis://127.0.0.1:${await freePort()}` });
        client.on('error', noop);
        const error = await within(rejects(client.lock(uniqueName()).tryAcquire()), 5_000, 'tryAcquire, nothing listening');
        await client.close();
        return error;
      },
    ],
    ERR_LOCK_WRONG_TYPE: [
      'acquire() of a lock whose key holds a string',
      async () => {
        const name = uniqueName();
        await s.f.admin.set(lockKey(name), 'not a lock');
        return rejects(s.client.lock(name).acquire({ waitMs: 0 }));
      },
    ],
    ERR_LOCK_FORBIDDEN: [
      'acquire() by an ACL user whose key pattern does not cover the prefix',
      async () => {
        const user = await createRelockUser(s.f.admin, `codes-${Math.random().toString(36).slice(2)}`, { prefix: 'elsewhere' });
        const client = s.f.client({ redis: { host: s.f.server.host, port: s.f.server.port, ...user.options } });
        client.on('error', noop);
        return rejects(client.lock(uniqueName()).acquire({ waitMs: 0 }));
      },
    ],
    ERR_LOCK_FENCE_OVERFLOW: [
      'acquire() when the fence key holds a token beyond Number.MAX_SAFE_INTEGER',
      async () => {
        const name = uniqueName();
        await s.f.admin.set(`${lockKey(name)}:fence`, '9007199254740993');
        return rejects(s.client.lock(name).acquire({ waitMs: 0 }));
      },
    ],
    ERR_LOCK_CLOSED: [
      'lease.release() after client.close()',
      async () => {
        const client = s.f.client();
        const lease = await client.lock(uniqueName()).acquire();
        await client.close();
        return rejects(lease.release());
      },
    ],
    ERR_LOCK_LEASE_TOO_SHORT: [
      'acquire({ leaseMs: 5 }) over a link with 10 ms of latency each way',
      async () => {
        const proxy = await startProxy(s.f.server);
        proxy.delay(10);
        const client = s.f.client({ redis: { ...proxy.options } });
        try {
          return await within(rejects(client.lock(uniqueName()).acquire({ leaseMs: 5, waitMs: 5_000 })), 5_000, 'acquire with a too short lease');
        } finally {
          await client.close();
          await proxy.close();
        }
      },
    ],
    ERR_LOCK_EVICTION_POLICY: [
      "the 'warning' at the first acquire when maxmemory-policy is allkeys-lru",
      async () => {
        await s.f.admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
        try {
          const client = s.f.client();
          const warned = once(client, 'warning');
          await (await client.lock(uniqueName()).acquire()).release();
          return (await within(warned, 2_000, 'the eviction warning'))[0];
        } finally {
          await s.f.admin.config('SET', 'maxmemory-policy', 'noeviction');
        }
      },
    ],
    ERR_LOCK_ABANDONED: [
      "the 'warning' when a lease renewed by the watchdog is garbage-collected without a release",
      async () => {
        const client = s.f.client();
        const warned = new Promise((resolve) => client.on('warning', (warning) => warning.code === 'ERR_LOCK_ABANDONED' && resolve(warning)));
        const drop = async () => void (await client.lock(uniqueName()).acquire());
        await drop();
        let warning: unknown;
        void warned.then((w) => (warning = w));
        await collectUntil(() => warning !== undefined);
        return within(warned, 1_000, 'the abandonment warning');
      },
    ],
    ERR_LOCK_RESIGNED: [
      "the reason of a leadership's signal after resign()",
      async () => {
        const term = await s.client.leader(uniqueName()).campaign();
        await term.resign();
        return term.signal.reason;
      },
    ],
    ERR_LOCK_SELF_WAIT: [
      "the 'warning' when an acquire waits longer than a lease for a lock its own client holds",
      async () => {
        process.stdout.write('\n  expected: the RelockWarning [ERR_LOCK_SELF_WAIT] below is what this test provokes\n');
        const client = s.f.client({ leaseMs: 60 });
        const warned = new Promise((resolve) => client.on('warning', (warning) => warning.code === 'ERR_LOCK_SELF_WAIT' && resolve(warning)));
        const lock = client.lock(uniqueName());
        const lease = await lock.acquire();
        const waiting = lock.acquire({ waitMs: 1_000 }).then((next) => next.release(), noop); // Node prints the process warning too: expected
        const warning = await within(warned, 1_500, 'the self-wait warning');
        await lease.release();
        await waiting;
        return warning;
      },
    ],
    ERR_LOCK_PERMITS_MISMATCH: [
      'a semaphore acquire with another limit than the leases held under its name',
      async () => {
        const name = uniqueName();
        const held = await s.other.semaphore(name, { permits: 3 }).acquire();
        const error = await rejects(s.client.semaphore(name, { permits: 5 }).acquire({ waitMs: 0 }));
        await held.release();
        return error;
      },
    ],
    ERR_LOCK_UPGRADE: [
      'writeLock().acquire() in a context that holds the read lock of the same read-write lock',
      async () => {
        const rw = s.client.readWriteLock(uniqueName());
        return rw.readLock().runExclusive(() => rejects(rw.writeLock().acquire()));
      },
    ],
    ERR_LOCK_NO_QUORUM: [
      'tryAcquire() on a Redlock client of 3 masters, 2 of them with nothing listening',
      async () => {
        const client = new LockClient({ redis: [s.f.server.url, `redis://127.0.0.1:${await freePort()}`, `redis://127.0.0.1:${await freePort()}`] });
        client.on('error', noop);
        const error = await within(rejects(client.lock(uniqueName()).tryAcquire()), 5_000, 'tryAcquire, a majority down');
        await client.close();
        return error;
      },
    ],
    ERR_LOCK_REPLICATION: [
      'acquire() with `replicas: 1` on a server that has no replica (WAIT answers 0)',
      async () => {
        const client = new LockClient({ redis: s.f.server.url, replicas: 1, replicaTimeoutMs: 20 });
        const error = await rejects(client.lock(uniqueName()).acquire());
        await client.close();
        return error;
      },
    ],
  };

  for (const [code, [how, produce]] of Object.entries(table)) {
    it(`gives ${code} for ${how}`, async () => {
      const error = await produce();
      assert.instance(error, LockError, `a LockError (got ${String(error)})`);
      assert.is((error as LockError).code, code);
    });
  }

  it('leaves no hold behind when an acquire fails with ERR_LOCK_FENCE_OVERFLOW', async () => {
    const name = uniqueName();
    await s.f.admin.set(`${lockKey(name)}:fence`, '9007199254740993');
    const error = await rejects(s.client.lock(name).acquire({ waitMs: 0 }));
    assert.is(error.code, 'ERR_LOCK_FENCE_OVERFLOW');
    await sleep(50); // a give-back would be on its way
    assert.equal(await s.f.admin.hgetall(lockKey(name)), {}, 'no owner nobody has blocks the lock for a whole lease');
  });

  it('hands out the last safe token, 2^53 - 1, exactly, and refuses the next with nothing held (lock, read-write lock, semaphore)', async () => {
    const kinds = [
      ['lock', (n: string) => s.client.lock(n), (n: string) => `${lockKey(n)}:fence`],
      ['write lock', (n: string) => s.client.readWriteLock(n).writeLock(), (n: string) => `${lockKey(n)}:rw:fence`],
      ['semaphore', (n: string) => s.client.semaphore(n, { permits: 2 }), (n: string) => `${lockKey(n)}:sem:fence`],
    ] as const;
    for (const [kind, make, fence] of kinds) {
      const name = uniqueName();
      // INCR gives 2^53 - 1: replied as an integer, ioredis read it as 2^53 after the hold was written.
      await s.f.admin.set(fence(name), '9007199254740990');
      const lease = await make(name).acquire({ waitMs: 0 });
      assert.is(lease.fencingToken, Number.MAX_SAFE_INTEGER, `${kind}: the token 2^53 - 1`);
      await lease.release();
      const error = await rejects(make(name).acquire({ waitMs: 0 }));
      assert.is(error.code, 'ERR_LOCK_FENCE_OVERFLOW', `${kind}: the next token would leave the safe integers`);
    }
  });

  it('gives each failure kind its own code', () => {
    const codes = Object.keys(table);
    assert.is(new Set(codes).size, codes.length);
  });
});

describe('Lease#release after LockClient#close (issue 7, 2.4)', (it) => {
  const s = setup(it);

  it('rejects with a LockError ERR_LOCK_CLOSED, not ioredis "Connection is closed."', async () => {
    const client = s.f.client();
    const lock = client.lock(uniqueName());
    const lease = await lock.acquire();
    const nested = await lease.run(() => lock.acquire());
    await client.close();
    for (const each of [nested, lease]) {
      const error = await rejects(each.release());
      assert.instance(error, LockError, `a LockError, got ${String(error)}`);
      assert.is(error.code, 'ERR_LOCK_CLOSED');
      assert.not.match(error.message, /Connection is closed/);
    }
    await lease[Symbol.asyncDispose](); // `await using` after close() does not throw either
  });
});

describe('LockClient#close racing a contended acquire (issue 7, 2.5)', (it) => {
  const s = setup(it);

  it('never opens a connection after close(): a process that closes its clients mid-acquire exits on its own', async () => {
    const held = await s.client.lock(uniqueName()).acquire();
    try {
      // It takes about 1.5 s once started.
      const { code, output } = await exitsOnItsOwn(
        `
import { createRequire } from 'node:module';
import { LockClient } from ${RELOCK};
const { Redis } = createRequire(${PACKAGE})('ioredis');
const [url, name] = process.argv.slice(2);
const turns = async (n) => { for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve)); };
const microtasks = (n, fn) => { let chain = Promise.resolve(); for (let i = 0; i < n; i++) chain = chain.then(); chain.then(fn); };
// Clients made from the URL: close() 0..15 event-loop turns after a contended acquire began.
for (let n = 0; n < 16; n++) {
  const client = new LockClient({ redis: url });
  client.on('error', () => undefined);
  const lock = client.lock(name);
  await lock.isLocked(); // connected
  const acquiring = lock.acquire().catch(() => undefined);
  await turns(n);
  await client.close();
  await acquiring;
}
// A client passed in: close() 0..15 microtasks after the attempt's reply arrived (the lock is held).
const redis = new Redis(url);
const evalsha = redis.evalsha.bind(redis);
let onReply;
redis.evalsha = (...args) => evalsha(...args).then((reply) => { const hook = onReply; onReply = undefined; hook?.(); return reply; });
for (let n = 0; n < 16; n++) {
  const client = new LockClient({ redis });
  const lock = client.lock(name);
  await lock.isLocked();
  onReply = () => microtasks(n, () => void client.close());
  await lock.acquire().catch(() => undefined);
  await client.close();
}
redis.disconnect();
console.log('done');
`,
        [s.f.server.url, held.name],
        8_000,
        'the child process',
      );
      assert.is(code, 0, output);
      assert.match(output, /done/);
    } finally {
      await held.release();
    }
  });

  it("rejects an acquire that close() interrupts with close()'s AbortError, at every offset 0..15 microtasks after the attempt's reply", async () => {
    const redis = s.f.server.connect();
    const nextReply = hookReplies(redis, 'evalsha');
    const held = await s.other.lock(uniqueName()).acquire();
    let wrong: string[];
    try {
      wrong = await closeAtEveryOffset(() => new LockClient({ redis }), held.name, nextReply);
    } finally {
      await held.release();
    }
    assert.equal(wrong, [], 'every pending acquire rejects with the AbortError of close()');
  });
});
