// Replica sync (`replicas`, `replicaTimeoutMs`) on one primary with one replica (no Cluster): the
// options are checked before any I/O, an acquire waits for the replica, and one that the replica
// does not acknowledge is given back with ERR_LOCK_REPLICATION.
import * as assert from 'uvu/assert';
import { GlideClient, Logger } from '@valkey/valkey-glide';
import { createClient } from 'redis';
import { LockClient, LockError, type LockClientOptions } from '../../../src/index.ts';
import { TEST_CLIENT } from '../../helpers/clients.ts';
import { describe, eventually, rejects, uniqueName } from '../../helpers/describe.ts';
import { startPrivateRedis, startReplicaOf, type RedisServer } from '../../helpers/redis.ts';
import { calls } from './support.ts';

// GLIDE logs every error reply (relock's first EVALSHA's NOSCRIPT) at WARN on stdout by default.
Logger.setLoggerConfig('off');

let primary: RedisServer;
let replica: RedisServer;
const clients: LockClient[] = [];
const client = (options: { redis?: LockClientOptions['redis']; replicas?: number; replicaTimeoutMs?: number } = {}) => {
  const made = new LockClient({ redis: primary.url, ...options });
  clients.push(made);
  return made;
};

/** Runs `fn` with the replica frozen (SIGSTOP): it acknowledges nothing until `fn` settles. */
async function whileReplicaFrozen<T>(fn: () => Promise<T>): Promise<T> {
  replica.pause();
  try {
    return await fn();
  } finally {
    replica.resume();
  }
}

describe('Replica sync on one primary (replicas, replicaTimeoutMs)', (it) => {
  it.before(async () => {
    primary = await startPrivateRedis({ args: ['--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '0'] });
    replica = await startReplicaOf(primary);
  });
  it.after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await replica.stop();
    await primary.stop();
  });

  it('refuses bad options with a TypeError or RangeError naming them, before any connection', () => {
    assert.throws(() => new LockClient({ redis: primary.url, replicas: -1 }), (e: Error) => e instanceof RangeError && /`replicas`/.test(e.message));
    assert.throws(() => new LockClient({ redis: primary.url, replicas: 1.5 }), (e: Error) => e instanceof RangeError && /`replicas`/.test(e.message));
    assert.throws(() => new LockClient({ redis: primary.url, replicas: '1' as never }), (e: Error) => e instanceof TypeError && /`replicas`/.test(e.message));
    assert.throws(() => new LockClient({ redis: primary.url, replicaTimeoutMs: 0 }), (e: Error) => e instanceof RangeError && /`replicaTimeoutMs`/.test(e.message));
    assert.throws(() => new LockClient({ redis: primary.url, replicaTimeoutMs: 60_001 }), (e: Error) => e instanceof RangeError && /`replicaTimeoutMs`/.test(e.message));
    assert.throws(
      () => new LockClient({ redis: ['redis://127.0.0.1:1', 'redis://127.0.0.1:2', 'redis://127.0.0.1:3'], replicas: 1 }),
      (e: Error) => e instanceof TypeError && /`replicas`/.test(e.message),
    );
  });

  it('waits for the replica: the lease comes back once the replica has the lock', async () => {
    const synced = client({ replicas: 1, replicaTimeoutMs: 4_000 }); // generous: the machine may be loaded
    const name = uniqueName();
    const waits = await calls(primary, 'wait');
    const lease = await synced.lock(name).acquire();
    assert.is(await calls(primary, 'wait'), waits + 1);
    assert.is(await replica.connect().hlen(`relock:{${name}}`), 1, 'on the replica when acquire() resolved');
    // A nested acquire sends no WAIT.
    await lease.run(() => synced.lock(name).runExclusive(() => undefined));
    assert.is(await calls(primary, 'wait'), waits + 1);
    await lease.release();
  });

  it('gives the lock back and rejects with ERR_LOCK_REPLICATION when the replica does not answer in time', async () => {
    const synced = client({ replicas: 1, replicaTimeoutMs: 100 });
    const other = client();
    const name = uniqueName();
    const [error, tried] = await whileReplicaFrozen(async () => [await rejects(synced.lock(name).acquire({ waitMs: 1_000 })), await rejects(synced.lock(name).tryAcquire())]);
    for (const e of [error, tried]) {
      assert.instance(e, LockError);
      assert.is((e as LockError).code, 'ERR_LOCK_REPLICATION');
      assert.is((e as LockError).lockName, name);
    }
    await eventually(async () => !(await other.lock(name).isLocked()), 'given back');
  });

  it('waits for the replica on a semaphore acquire too; one the replica does not acknowledge gives its permits back', async () => {
    const synced = client({ replicas: 1, replicaTimeoutMs: 4_000 });
    const name = uniqueName();
    const semaphore = synced.semaphore(name, { permits: 2 });
    const waits = await calls(primary, 'wait');
    const lease = await semaphore.acquire();
    assert.is(await calls(primary, 'wait'), waits + 1);
    assert.is(await replica.connect().hget(`relock:{${name}}:sem`, 'held'), '1', 'on the replica when acquire() resolved');
    await lease.release();
    const hasty = client({ replicas: 1, replicaTimeoutMs: 100 });
    const error = await whileReplicaFrozen(() => rejects(hasty.semaphore(name, { permits: 2 }).acquire({ permits: 2 })));
    assert.instance(error, LockError);
    assert.is((error as LockError).code, 'ERR_LOCK_REPLICATION');
    await eventually(async () => (await semaphore.availablePermits()) === 2, 'the permits given back');
  });

  it('waits for the replica on a fair lock, fresh and handed over; one the replica does not acknowledge is given back', async () => {
    const synced = client({ replicas: 1, replicaTimeoutMs: 4_000 });
    const name = uniqueName();
    const lock = synced.fairLock(name);
    const waits = await calls(primary, 'wait');
    const first = await lock.acquire();
    assert.is(await calls(primary, 'wait'), waits + 1, 'a fresh acquisition');
    const next = client({ replicas: 1, replicaTimeoutMs: 4_000 }).fairLock(name).acquire();
    await eventually(async () => (await primary.connect().llen(`relock:{${name}}:fair:q`)) === 1, 'the second waits in the queue');
    await first.release();
    const second = await next;
    assert.is(await calls(primary, 'wait'), waits + 2, 'a hand-off');
    assert.ok(second.fencingToken > first.fencingToken);
    await second.release();
    const hasty = client({ replicas: 1, replicaTimeoutMs: 100 });
    const error = await whileReplicaFrozen(() => rejects(hasty.fairLock(name).acquire()));
    assert.is((error as LockError).code, 'ERR_LOCK_REPLICATION');
    await eventually(async () => !(await lock.isLocked()), 'given back');
  });

  it('waits for the replica on both sides of a read-write lock; one the replica does not acknowledge is given back', async () => {
    const synced = client({ replicas: 1, replicaTimeoutMs: 4_000 });
    const name = uniqueName();
    const rw = synced.readWriteLock(name);
    const waits = await calls(primary, 'wait');
    const write = await rw.writeLock().acquire();
    assert.is(await calls(primary, 'wait'), waits + 1, 'the write side');
    await write.release();
    const read = await rw.readLock().acquire();
    assert.is(await calls(primary, 'wait'), waits + 2, 'the read side');
    await read.release();
    const hasty = client({ replicas: 1, replicaTimeoutMs: 100 });
    const error = await whileReplicaFrozen(() => rejects(hasty.readWriteLock(name).writeLock().acquire()));
    assert.is((error as LockError).code, 'ERR_LOCK_REPLICATION');
    await eventually(async () => !(await rw.writeLock().isLocked()), 'given back');
  });

  // It makes a client of each family itself: run once, in npm test, not again in each client cell.
  const once = TEST_CLIENT === 'ioredis' ? it : () => undefined;
  once('gives WAIT the deadline it asks for: a replica frozen longer than 5 s, replicaTimeoutMs 8000, ends as ERR_LOCK_REPLICATION over ioredis, node-redis and GLIDE', async () => {
    // Each client's usual answer deadline is shorter than the WAIT: relock's own ioredis connection
    // and node-redis 5 s, this GLIDE client 2 s (the suites' requestTimeout).
    const nodeRedis = createClient({ url: primary.url });
    nodeRedis.on('error', () => undefined);
    await nodeRedis.connect();
    const glide = await GlideClient.createClient({ addresses: [{ host: primary.host, port: primary.port }], requestTimeout: 2_000 });
    try {
      const sync = { replicas: 1, replicaTimeoutMs: 8_000 };
      const families = [client(sync), client({ redis: nodeRedis, ...sync }), client({ redis: glide, ...sync })];
      const name = uniqueName();
      const outcomes = await whileReplicaFrozen(() =>
        Promise.all(
          families.map(async (family, i) => {
            const startedAt = performance.now();
            const error = await rejects(family.lock(`${name}-${i}`).acquire());
            return { error: error as LockError, ms: performance.now() - startedAt };
          }),
        ),
      );
      for (const [i, { error, ms }] of outcomes.entries()) {
        const family = ['ioredis', 'node-redis', 'GLIDE'][i];
        assert.instance(error, LockError, family);
        assert.is(error.code, 'ERR_LOCK_REPLICATION', `${family}: ${error.message}`);
        // The server answers WAIT when its timeout is over: never before (a lower bound holds under load).
        assert.ok(ms >= 7_900, `${family}: rejected after ${ms.toFixed(0)} ms, before the WAIT's 8000 ms`);
      }
      const other = client();
      for (const i of families.keys()) await eventually(async () => !(await other.lock(`${name}-${i}`).isLocked()), 'given back');
    } finally {
      await Promise.all(clients.splice(0).map((c) => c.close()));
      glide.close();
      nodeRedis.destroy();
    }
  }, 30_000);

  it('asks more replicas than there are: refused, whatever the wait', async () => {
    const greedy = client({ replicas: 2, replicaTimeoutMs: 50 });
    const error = await rejects(greedy.lock(uniqueName()).acquire());
    assert.is((error as LockError).code, 'ERR_LOCK_REPLICATION');
    assert.match((error as LockError).message, /only 1 of the 2 replicas/);
  });
});
