import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { LockClient, LockError, LockLostError, LockNotHeldError } from '../../../src/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { commandStats, setup, sleep } from '../../helpers/fixture.ts';
import { assertClosedBeforeCall } from '../../helpers/closed.ts';



async function pubsubClients(admin: Redis): Promise<number> {
  return String(await admin.call('CLIENT', 'LIST', 'TYPE', 'pubsub')).split('\n').filter(Boolean).length;
}

describe('Waiting', (it) => {
  const s = setup(it);

  it('rejects with the reason of a signal aborted before the call, without I/O', async () => {
    const controller = new AbortController();
    controller.abort(new Error('not needed any more'));
    const before = await commandStats(s.f.admin);
    const error = await rejects(s.client.lock(uniqueName()).acquire({ signal: controller.signal }));
    assert.is(error.message, 'not needed any more');
    const after = await commandStats(s.f.admin);
    assert.is(after.evalsha ?? 0, before.evalsha ?? 0);
  });

  it('rejects with the signal reason when aborted during a wait, and leaves the queue', async () => {
    const name = uniqueName();
    const held = await s.other.lock(name).acquire();
    const controller = new AbortController();
    const waiting = s.client.lock(name).acquire({ signal: controller.signal });
    await eventually(() => s.client.waiting === 1, 'queued');
    controller.abort();
    const error = await rejects(waiting);
    assert.is(error.name, 'AbortError');
    assert.is(s.client.waiting, 0);
    await held.release();
    assert.not.ok(await s.client.lock(name).isLocked(), 'the aborted waiter took nothing');
  });

  it('wakes one of 40 waiters per release, and only the head tries', async () => {
    const name = uniqueName();
    const held = await s.other.lock(name).acquire();
    const acquired: number[] = [];
    const leases = Array.from({ length: 40 }, (_, i) =>
      s.client
        .lock(name)
        .acquire()
        .then((lease) => (acquired.push(i), lease)),
    );
    await eventually(() => s.client.waiting === 40, '40 queued');
    await sleep(50);
    const before = await commandStats(s.f.admin);
    await held.release();
    await eventually(() => acquired.length === 1, 'one waiter acquires');
    await sleep(200);
    const after = await commandStats(s.f.admin);
    assert.is(acquired.length, 1);
    assert.is(s.client.waiting, 39);
    // The release itself and one acquire attempt, by the head.
    assert.is((after.evalsha ?? 0) - (before.evalsha ?? 0), 2);
    assert.is(acquired[0], 0, 'first come, first served');
    // Hand the lock down the queue: each release wakes the next in FIFO order.
    for (let i = 0; i < 40; i++) {
      const lease = await within(leases[i]!, 5_000, `waiter ${i}`);
      await lease.release();
    }
    assert.equal(
      acquired,
      Array.from({ length: 40 }, (_, i) => i),
    );
  });

  it('uses one subscriber connection for 100 locks with waiters, and drops the subscriptions after', async () => {
    const names = Array.from({ length: 100 }, () => uniqueName());
    const holder = s.f.client();
    const waiter = s.f.client();
    const held = await Promise.all(names.map((name) => holder.lock(name).acquire()));
    const before = await pubsubClients(s.f.admin);
    const waits = names.map((name) => waiter.lock(name).acquire());
    await eventually(() => waiter.waiting === 100, '100 waiters');
    assert.is((await pubsubClients(s.f.admin)) - before, 1);
    const channels = (await s.f.admin.pubsub('CHANNELS', 'relock:*')) as string[];
    assert.ok(names.every((name) => channels.includes(`relock:{${name}}:released`)));
    await Promise.all(held.map((lease) => lease.release()));
    await Promise.all((await Promise.all(waits)).map((lease) => lease.release()));
    await eventually(async () => ((await s.f.admin.pubsub('NUMSUB', `relock:{${names[0]}}:released`)) as unknown[])[1] === 0, 'unsubscribed');
  });

  it('retries at once when the pub/sub connection is killed right before a release', async () => {
    const name = uniqueName();
    const held = await s.other.lock(name).acquire(); // 30 s lease: only a retry can make this quick
    const waiting = s.client.lock(name).acquire();
    await eventually(() => s.client.waiting === 1, 'queued');
    await s.f.admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await held.release(); // published while the subscriber is down: lost
    await (await within(waiting, 5_000, 'the waiter after the subscriber came back')).release();
  });

  it('lets several clients do a racy read-modify-write with no overlap', async () => {
    const name = uniqueName();
    const counter = `counter:${name}`;
    const clients = [s.f.client(), s.f.client(), s.f.client(), s.f.client()];
    let inside = 0;
    let overlaps = 0;
    let lastToken = 0;
    let tokenOrderBroken = false;
    await Promise.all(
      clients.flatMap((c) =>
        [0, 1].map(async () => {
          for (let i = 0; i < 25; i++) {
            await c.lock(name).runExclusive(async (lease) => {
              if (++inside > 1) overlaps++;
              if (lease.fencingToken <= lastToken) tokenOrderBroken = true;
              lastToken = lease.fencingToken;
              const value = Number((await s.f.admin.get(counter)) ?? 0);
              await sleep(Math.random() * 2);
              await s.f.admin.set(counter, value + 1);
              inside--;
            });
          }
        }),
      ),
    );
    assert.is(overlaps, 0);
    assert.not.ok(tokenOrderBroken);
    assert.is(await s.f.admin.get(counter), '200');
  });

  it('survives SCRIPT FLUSH between calls by falling back to EVAL once', async () => {
    const lock = s.client.lock(uniqueName());
    await (await lock.acquire()).release();
    await s.f.admin.script('FLUSH');
    const before = await commandStats(s.f.admin);
    const lease = await lock.acquire();
    await lease.release();
    await lease.run(() => undefined);
    const after = await commandStats(s.f.admin);
    assert.is((after.eval ?? 0) - (before.eval ?? 0), 2, 'acquire and release each reloaded once');
    const again = await lock.acquire();
    await again.release();
    const last = await commandStats(s.f.admin);
    assert.is(last.eval ?? 0, after.eval ?? 0, 'then EVALSHA only');
  });
});

describe('LockClient#close', (it) => {
  const s = setup(it);

  it('rejects pending waits with an AbortError, stops renewals, and is idempotent', async () => {
    const c = s.f.client({ leaseMs: 500 });
    const name = uniqueName();
    const held = await s.other.lock(name).acquire();
    const mine = await c.lock(uniqueName()).acquire();
    const waits = [rejects(c.lock(name).acquire()), rejects(c.lock(name).acquire({ waitMs: 60_000 }))];
    await eventually(() => c.waiting === 2, 'queued');
    await Promise.all([c.close(), c.close()]);
    for (const wait of waits) assert.is((await wait).name, 'AbortError');
    assert.ok(mine.signal.aborted, 'held leases learn they are no longer renewed');
    await eventually(async () => !(await s.other.lock(mine.name).isLocked()), 'the unrenewed lock expires', 2_000);
    assertClosedBeforeCall(await rejects(c.lock(name).acquire()));
    assert.ok(c.closed);
    await held.release();
  });

  it('leaves a Redis client passed in open, and creates one subscriber from it', async () => {
    const redis = new Redis(s.f.server.url);
    const c = new LockClient({ redis });
    const lease = await c.lock(uniqueName()).acquire();
    await lease.release();
    await c.close();
    assert.is(await redis.ping(), 'PONG');
    redis.disconnect();
  });

  it('accepts ioredis options', async () => {
    const c = new LockClient({ redis: { host: s.f.server.host, port: s.f.server.port } });
    await (await c.lock(uniqueName()).acquire()).release();
    await c.close();
  });
});

describe('Unreachable Redis', (it) => {
  const s = setup(it, {}, {}, { private: true });

  it('bounds the wait by waitMs while the server does not answer, and releases a late success', async () => {
    const c = s.f.client();
    const name = uniqueName();
    await c.lock(uniqueName()).isLocked(); // connected
    const pid = Number((await s.f.admin.info('server')).match(/process_id:(\d+)/)![1]);
    process.kill(pid, 'SIGSTOP');
    try {
      const started = performance.now();
      const error = await rejects(c.lock(name).acquire({ waitMs: 1_500 }));
      const waited = performance.now() - started;
      // A server that does not answer is not a held lock: the wait ends as unreachable (issue 7, 2.2).
      assert.instance(error, LockError);
      assert.is(error.code, 'ERR_LOCK_UNREACHABLE');
      assert.ok(waited >= 1_450 && waited < 2_500, `settled after ${waited} ms`);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    // The attempt was queued in the socket; it goes through now and is given back at once.
    await eventually(
      async () => ((await commandStats(s.f.admin)).evalsha ?? 0) >= 2 && (await s.f.admin.exists(`relock:{${name}}`)) === 0,
      'the late attempt ran and was released: no phantom hold',
      3_000,
    );
    const lease = await s.other.lock(name).acquire({ waitMs: 0 });
    await lease.release();
  });

  it('treats a release that ioredis resent after a reconnect as done', async () => {
    const redis = new Redis(s.f.server.url);
    redis.on('error', () => undefined);
    const c = new LockClient({ redis });
    const name = uniqueName();
    const outer = await c.lock(name).acquire();
    const inner = await outer.run(() => c.lock(name).acquire());
    const pid = Number((await s.f.admin.info('server')).match(/process_id:(\d+)/)![1]);
    for (const lease of [inner, outer]) {
      process.kill(pid, 'SIGSTOP');
      const releasing = lease.release();
      await sleep(50); // the command is in the server's socket buffer
      (redis as unknown as { stream: { destroy(): void } }).stream.destroy();
      await sleep(50);
      process.kill(pid, 'SIGCONT');
      await within(releasing, 5_000, 'the resent release');
    }
    assert.not.ok(await s.other.lock(name).isLocked());
    assert.instance(await rejects(outer.release()), LockNotHeldError);
    await c.close();
    redis.disconnect();
  });
});

describe('Unreachable Redis, more', (it) => {
  const s = setup(it, {}, {}, { private: true });
  const pause = async () => {
    const pid = Number((await s.f.admin.info('server')).match(/process_id:(\d+)/)![1]);
    process.kill(pid, 'SIGSTOP');
    return () => process.kill(pid, 'SIGCONT');
  };

  it('aborts lease.signal before the lease would end on Redis when Redis stops answering', async () => {
    const c = s.f.client({ leaseMs: 600 });
    const lease = await c.lock(uniqueName()).acquire();
    const resume = await pause();
    const pausedAt = performance.now();
    try {
      await within(
        new Promise((resolve) => lease.signal.addEventListener('abort', resolve, { once: true })),
        3_000,
        'the loss signal',
      );
      // The last renewal before the pause began at most 200 ms before it: the lease ends on Redis
      // 600 ms after that renewal, and the signal comes 60 ms earlier.
      assert.ok(performance.now() - pausedAt < 600, `aborted ${performance.now() - pausedAt} ms into the pause`);
      assert.instance(lease.signal.reason, LockLostError);
      assert.match(lease.signal.reason.message, /could not be renewed/);
    } finally {
      resume();
    }
  });

  it('never hands out a lease whose reply came after the lease could have ended', async () => {
    const c = s.f.client({ leaseMs: 300 });
    const lock = c.lock(uniqueName());
    await lock.isLocked(); // connected
    const resume = await pause();
    const acquiring = lock.acquire();
    await sleep(400); // the first attempt's lease (300 ms from its sending) may be over when it answers
    resume();
    const lease = await within(acquiring, 5_000, 'acquire after the pause');
    await sleep(100);
    assert.not.ok(lease.signal.aborted, 'the lease handed out is live');
    assert.ok((await lock.remainingTtlMs())! > 0);
    assert.is(await s.f.admin.get(`relock:{${lock.name}}:fence`), String(lease.fencingToken));
    await lease.release();
  });

  it('gives back the phantom of a first attempt that ioredis resent after it went through', async () => {
    const redis = s.f.server.connect();
    const c = new LockClient({ redis });
    const lock = c.lock(uniqueName());
    await lock.isLocked(); // connected
    const resume = await pause();
    const acquiring = lock.acquire();
    await sleep(50); // the attempt is in the server's socket buffer
    (redis as unknown as { stream: { destroy(): void } }).stream.destroy(); // ioredis will resend it
    await sleep(50);
    resume(); // the first send takes the lock; the resend finds it taken
    const lease = await within(acquiring, 5_000, 'acquire after the phantom was given back');
    const owners = Object.keys(await s.f.admin.hgetall(`relock:{${lock.name}}`));
    assert.is(owners.length, 1, 'only the live hold is left');
    await lease.release();
    assert.not.ok(await lock.isLocked());
    await c.close();
  });

  it('rejects the release of a hold signalled lost before it, even if the connection dropped meanwhile', async () => {
    const redis = s.f.server.connect();
    const c = new LockClient({ redis, leaseMs: 600 });
    const lock = c.lock(uniqueName());
    const lease = await lock.acquire();
    await s.f.admin.del(`relock:{${lock.name}}`);
    await eventually(() => lease.signal.aborted, 'loss signalled', 2_000);
    const resume = await pause();
    const releasing = rejects(lease.release());
    await sleep(50);
    (redis as unknown as { stream: { destroy(): void } }).stream.destroy(); // ioredis will resend it
    await sleep(50);
    resume();
    assert.instance(await within(releasing, 5_000, 'release'), LockNotHeldError);
    await c.close();
  });
});

describe('Round trips', (it) => {
  const s = setup(it);

  it('takes two commands per uncontended acquire + release: one EVALSHA each', async () => {
    const lock = s.client.lock(uniqueName());
    await (await lock.acquire()).release(); // the first acquire also checks maxmemory-policy, once
    await s.f.admin.config('RESETSTAT');
    const rounds = 100;
    for (let i = 0; i < rounds; i++) await (await lock.acquire()).release();
    const stats = await commandStats(s.f.admin);
    const topLevel = Object.entries(stats).filter(([command]) => !command.startsWith('config') && !['info', 'hset', 'hget', 'pexpire', 'pttl', 'time', 'get', 'set', 'del', 'publish', 'incr'].includes(command));
    assert.equal(Object.fromEntries(topLevel), { evalsha: 2 * rounds });
    // Inside the scripts: acquire PTTL HSET PEXPIRE TIME GET SET; release HGET DEL PUBLISH.
    const inner = ['pttl', 'hset', 'pexpire', 'time', 'get', 'set', 'hget', 'del', 'publish'].reduce((sum, c) => sum + (stats[c] ?? 0), 0);
    assert.is(inner / rounds, 9);
  });
});

describe('LockClient#close on a dead Redis', (it) => {
  it('does not wait for a Redis that is gone', async () => {
    const { startPrivateRedis } = await import('../../helpers/redis.ts');
    const server = await startPrivateRedis();
    const c = new LockClient({ redis: server.url });
    c.on('error', () => undefined);
    await (await c.lock(uniqueName()).acquire()).release();
    await server.kill();
    await within(c.close(), 2_000, 'close() with the server gone');
    await server.stop();
  });
});
