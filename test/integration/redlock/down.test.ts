// Redlock with masters down: a minority down still acquires, a majority down rejects with
// ERR_LOCK_NO_QUORUM naming each unreachable server, a held lease is lost when a majority goes, and
// fencing tokens stay ordered while different masters stop and start between acquisitions.
import * as assert from 'uvu/assert';
import { LockError, LockLostError } from '../../../src/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { lockKey, setupMasters } from './masters.ts';

describe('Redlock with masters down (3 masters)', (it) => {
  const m = setupMasters(it, 3);

  it('acquires with one master of three down, in well under 5 s, and releases', async () => {
    const client = m.client();
    await (await client.lock(uniqueName('rl')).acquire()).release(); // connected to all
    await m.servers[1]!.kill();
    try {
      const lock = client.lock(uniqueName('rl'));
      const started = performance.now();
      const lease = await within(lock.acquire(), 5_000, 'the acquire with a minority down');
      assert.ok(performance.now() - started < 5_000);
      assert.ok(await lock.isLocked());
      await lease.release();
      assert.is(await lock.isLocked(), false);
    } finally {
      await m.servers[1]!.restart();
    }
  });

  it('rejects acquire() and tryAcquire() with ERR_LOCK_NO_QUORUM naming each unreachable server when two of three are down', async () => {
    const client = m.client();
    await (await client.lock(uniqueName('rl')).acquire()).release();
    await Promise.all([m.servers[0]!.kill(), m.servers[2]!.kill()]);
    try {
      for (const attempt of [() => client.lock(uniqueName('rl')).acquire(), () => client.lock(uniqueName('rl')).tryAcquire(), () => client.lock(uniqueName('rl')).acquire({ waitMs: 2_000 })]) {
        const error = await within(rejects(attempt()), 6_000, 'the acquire with a majority down');
        assert.instance(error, LockError);
        assert.is(error.code, 'ERR_LOCK_NO_QUORUM');
        assert.match(error.message, /unreachable/);
        for (const down of [m.servers[0]!, m.servers[2]!]) assert.ok(error.message.includes(`${down.host}:${down.port}`), `${down.port} named in: ${error.message}`);
        assert.not.ok(error.message.includes(`unreachable: ${m.servers[1]!.host}:${m.servers[1]!.port}`), 'the live one is not called unreachable');
      }
      // Nothing was left behind on the one master that answered (the give-back is on its way).
      await eventually(async () => (await m.admins[1]!.keys('relock:{rl:*}')).length === 0, 'nothing left on the live master', 2_000);
    } finally {
      await Promise.all([m.servers[0]!.restart(), m.servers[2]!.restart()]);
    }
  });

  it('aborts lease.signal when a majority of masters goes down while held (before the lease ends), not for one', async () => {
    const client = m.client({ leaseMs: 600 });
    const lease = await client.lock(uniqueName('rl')).acquire();
    await m.servers[0]!.kill();
    await new Promise((resolve) => setTimeout(resolve, 700));
    assert.is(lease.signal.aborted, false, 'one of three down: still renewed on a majority');
    const killedAt = performance.now();
    await m.servers[1]!.kill();
    try {
      const reason = await within(
        lease.signal.aborted ? Promise.resolve(lease.signal.reason) : new Promise((resolve) => lease.signal.addEventListener('abort', () => resolve(lease.signal.reason), { once: true })),
        2_000,
        'the signal',
      );
      assert.instance(reason, LockLostError);
      assert.ok(performance.now() - killedAt < 600, `lost ${Math.round(performance.now() - killedAt)} ms after the second kill: within one lease`);
    } finally {
      await Promise.all([m.servers[0]!.restart(), m.servers[1]!.restart()]);
    }
  });

  it('keeps fencing tokens strictly increasing while different masters stop and start; a naive per-master INCR would not', async () => {
    const client = m.client();
    const name = uniqueName('rl');
    // Fences far above the clock floor, so every token comes from the masters' counters.
    const base = 8_000_000_000_000_000;
    for (const admin of m.admins) await admin.set(`${lockKey(name)}:fence`, String(base), 'PX', 3_600_000);
    const naiveKey = `naive:{${name}}`;
    for (const admin of m.admins) await admin.set(naiveKey, String(base));
    // Which master is down for each acquisition: the majorities differ from one to the next.
    const plan = [2, 2, 1, 0, 2, 1];
    const tokens: number[] = [];
    const naive: number[] = [];
    let down = -1;
    for (const next of plan) {
      if (down !== next) {
        if (down >= 0) await m.servers[down]!.restart(); // without persistence: it forgets its fence
        await m.servers[next]!.kill();
        down = next;
      }
      const lease = await within(client.lock(name).acquire({ waitMs: 5_000 }), 8_000, `the acquire with master ${next} down`);
      tokens.push(lease.fencingToken);
      await lease.release();
      // The naive rule on the same majority: each master counts its own, the token is their maximum.
      const up = m.admins.filter((_, i) => i !== next);
      naive.push(Math.max(...(await Promise.all(up.map((admin) => admin.incr(naiveKey))))));
    }
    await m.servers[down]!.restart();
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `token ${i}: ${tokens[i]} > ${tokens[i - 1]} (${tokens.join(', ')})`);
    const ordered = naive.every((token, i) => i === 0 || token > naive[i - 1]!);
    assert.not.ok(ordered, `the naive per-master INCR happened to stay ordered: ${naive.join(', ')}`);
  }, 40_000);

  it('rejects a waiter with ERR_LOCK_NO_QUORUM naming the masters that refused its subscriber connections, not as unreachable Redis', async () => {
    const holder = m.client();
    const waiter = m.client();
    const name = uniqueName('rl');
    const lease = await holder.lock(name).acquire();
    await (await waiter.lock(uniqueName('rl')).acquire()).release(); // the waiter's command connections are open
    // Masters 0 and 2 take no new connection: the waiter's subscriber connections (opened at its first wait) are refused there.
    const refusing = [0, 2];
    for (const i of refusing) {
      const connected = String(await m.admins[i]!.client('LIST')).trim().split('\n').length;
      await m.admins[i]!.config('SET', 'maxclients', String(connected));
    }
    try {
      const error = await within(rejects(waiter.lock(name).acquire()), 5_000, 'the wait that cannot subscribe on a majority');
      assert.instance(error, LockError);
      assert.is(error.code, 'ERR_LOCK_NO_QUORUM');
      assert.match(error.message, /subscribe/);
      for (const i of refusing) assert.ok(error.message.includes(`:${m.servers[i]!.port}`), `master ${i} named in: ${error.message}`);
      assert.not.ok(error.message.includes(`unreachable: 127.0.0.1:${m.servers[1]!.port}`), 'the master that took the subscription is not called unreachable');
      assert.ok(await holder.lock(name).isLocked(), 'the holder kept its lock');
    } finally {
      for (const i of refusing) await m.admins[i]!.config('SET', 'maxclients', '10000');
      await lease.release();
    }
  });

  it('lets a wait that begins while its subscriber connections come back from a drop wait for them: acquire() without waitMs, not ERR_LOCK_NO_QUORUM', async () => {
    // Found by the Lock contract on a Redlock client (its crashed-holder test, right after the
    // resubscribe test killed the subscribers): every master answered the attempt, yet the wait
    // failed at once, its subscriber connections "reconnecting" (the first reconnect is 100 ms after a drop).
    const holder = m.client();
    const waiter = m.client();
    const name = uniqueName('rl');
    // The waiter's subscriber connections are open (one wait), then dropped on every master.
    const first = await holder.lock(name).acquire();
    const opened = waiter.lock(name).acquire();
    await eventually(() => waiter.waiting === 1, 'the first wait queued');
    await first.release();
    await (await within(opened, 2_000, 'the first wait')).release();
    // Another name: its channel is subscribed anew (the first one's subscription lingers a while).
    const other = uniqueName('rl');
    const lease = await holder.lock(other).acquire();
    for (const admin of m.admins) await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    await new Promise((resolve) => setTimeout(resolve, 20)); // the drop is seen; the reconnect is 100 ms away
    let failed: unknown;
    const waiting = waiter.lock(other).acquire();
    waiting.catch((error: unknown) => (failed = error));
    await eventually(() => waiter.waiting === 1 || failed !== undefined, 'the wait queued', 2_000);
    if (failed !== undefined) throw failed;
    await lease.release();
    await (await within(waiting, 2_000, 'the waiter after the release')).release();
  });
});

describe('Redlock with masters down (5 masters)', (it) => {
  const m = setupMasters(it, 5);

  it('acquires with two of five down; rejects with ERR_LOCK_NO_QUORUM naming the three down when three are', async () => {
    const client = m.client();
    await (await client.lock(uniqueName('rl')).acquire()).release();
    await Promise.all([m.servers[0]!.kill(), m.servers[3]!.kill()]);
    const lease = await within(client.lock(uniqueName('rl')).acquire(), 5_000, 'the acquire with 2 of 5 down');
    await lease.release();
    await m.servers[4]!.kill();
    const error = await within(rejects(client.lock(uniqueName('rl')).tryAcquire()), 6_000, 'the tryAcquire with 3 of 5 down');
    assert.is(error.code, 'ERR_LOCK_NO_QUORUM');
    for (const i of [0, 3, 4]) assert.ok(error.message.includes(`:${m.servers[i]!.port}`), error.message);
    await Promise.all([0, 3, 4].map((i) => m.servers[i]!.restart()));
  });
});
