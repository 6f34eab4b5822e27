// client.readWriteLock() on a Redlock client of 3 masters: the single-server layout on every master,
// reads shared and writes excluded across clients, partial attempts given back (held elsewhere, or
// split between holders), the scripts' Redlock replies, downgrade and upgrade, wake-ups from any
// master, renewal on a majority and the loss of one, a minority down, a majority down, and fencing
// tokens ordered while the majorities differ from one holder to the next.
import type { Redis } from 'ioredis';
import * as assert from 'uvu/assert';
import * as rwLua from '../../../src/generated/rw-lock.ts';
import * as lua from '../../../src/generated/rw-lock.ts';
import { LockError, LockLostError, type Lease } from '../../../src/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { sleep } from '../../helpers/fixture.ts';
import { Recorder, sharedReads } from '../rw-lock/support.ts';
import { setupMasters } from './masters.ts';

/** The read-write lock's keys of `name` under the default prefix. */
const rwKeys = (name: string) => {
  const hash = `relock:{${name}}:rw`;
  return { hash, leases: `${hash}:leases`, intents: `${hash}:intents`, waiting: `${hash}:waiting`, batch: `${hash}:batch`, fence: `${hash}:fence`, toReaders: `${hash}:to-readers`, toWriters: `${hash}:to-writers` };
};

/** The members of the live holds on one master, sorted. */
const holdsOn = async (admin: Redis, name: string) => (await admin.zrange(rwKeys(name).leases, '0', '-1')).sort();

/** Redis TIME of a master in milliseconds. */
const timeMs = async (admin: Redis) => {
  const [seconds, micros] = (await admin.time()) as unknown as [string, string];
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
};

/** Another owner's write hold on one master, as a Redlock writer's would be there. */
const fakeWriter = async (admin: Redis, name: string, owner: string, leaseMs = 30_000) => {
  const k = rwKeys(name);
  await admin.hset(k.hash, 'writer', owner, `w:${owner}`, '1');
  await admin.zadd(k.leases, (await timeMs(admin)) + leaseMs, `w:${owner}`);
  await admin.pexpire(k.hash, leaseMs);
  await admin.pexpire(k.leases, leaseMs);
};

const abortedWith = (signal: AbortSignal, ms: number, what: string) =>
  within(signal.aborted ? Promise.resolve(signal.reason) : new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true })), ms, what);

describe('Redlock read-write lock: client.readWriteLock() over 3 masters', (it) => {
  const m = setupMasters(it, 3);

  /** Every master holds exactly these members (an acquire or release settles at a majority: the last may lag). */
  const everywhere = (name: string, members: string[], what: string) =>
    eventually(async () => (await Promise.all(m.admins.map((admin) => holdsOn(admin, name)))).every((held) => held.join() === members.sort().join()), what, 2_000);

  it('holds the single-server layout on every master: the writer field, its member with its lease, and the fence at its token', async () => {
    const client = m.client();
    const name = uniqueName('rrw');
    const lease = await client.readWriteLock(name).writeLock().acquire();
    const k = rwKeys(name);
    await eventually(async () => (await Promise.all(m.admins.map((admin) => admin.exists(k.hash)))).every((n) => n === 1), 'on every master', 2_000);
    const [member] = await holdsOn(m.admins[0]!, name);
    assert.ok(member!.startsWith(`w:${client.id}:`), member);
    for (const admin of m.admins) {
      assert.equal(await admin.hgetall(k.hash), { writer: member!.slice(2), [member!]: '1' });
      assert.ok(Number(await admin.zscore(k.leases, member!)) > (await timeMs(admin)) + 25_000);
      assert.ok(Number(await admin.get(k.fence)) >= lease.fencingToken);
    }
    const confirmed = (await Promise.all(m.admins.map((admin) => admin.get(k.fence)))).filter((fence) => Number(fence) === lease.fencingToken);
    assert.ok(confirmed.length >= 2, 'the token is the fence of a majority');
    await lease.release();
    await everywhere(name, [], 'released on every master');
  });

  it('shares reads and excludes writes across clients; a read after a write gets a larger token', async () => {
    const [a, b, c] = [m.client(), m.client(), m.client()];
    const name = uniqueName('rrw');
    const [readA, readB] = [a.readWriteLock(name).readLock(), b.readWriteLock(name).readLock()];
    const write = c.readWriteLock(name).writeLock();
    const [first, second] = await Promise.all([readA.acquire({ waitMs: 0 }), readB.acquire({ waitMs: 0 })]);
    assert.is(await write.tryAcquire(), null, 'readers keep the writer out');
    assert.ok(await readA.isLocked());
    assert.is(await write.isLocked(), false);
    await first.release();
    await second.release();
    const held = await write.acquire({ waitMs: 2_000 });
    assert.is(await readA.tryAcquire(), null, 'a writer keeps readers out');
    assert.ok(await write.isLocked());
    const waiting = readB.acquire();
    waiting.catch(() => undefined); // awaited below; settled at close() if the test fails first
    await eventually(() => b.waiting === 1, 'the reader waits');
    await held.release();
    const after = await within(waiting, 2_000, 'the reader after the write release');
    assert.ok(after.fencingToken > held.fencingToken, `${after.fencingToken} > ${held.fencingToken}`);
    await after.release();

    // Under contention from the three clients, 70 % reads: no write beside any hold, and reads did share.
    const recorder = new Recorder();
    await Promise.all(
      [a, b, c, a, b, c].map(async (client, i) => {
        const rw = client.readWriteLock(name);
        for (let round = 0; round < 5; round++) {
          const side = (i + round) % 10 < 7 ? 'read' : 'write';
          await (side === 'read' ? rw.readLock() : rw.writeLock()).runExclusive(() => recorder.hold(side, 5), { waitMs: 5_000 });
        }
      }),
    );
    recorder.assertSafe();
    assert.ok(sharedReads(recorder.intervals) > 0, 'some reads overlapped');
  });

  it('downgrades (the writer context reads, with a larger token) and refuses an upgrade with ERR_LOCK_UPGRADE', async () => {
    const client = m.client();
    const rw = client.readWriteLock(uniqueName('rrw'));
    await rw.writeLock().runExclusive(async (write) => {
      const read = await rw.readLock().acquire({ waitMs: 0 });
      assert.ok(read.fencingToken > write.fencingToken);
      assert.is(await read.run(() => rw.readLock().holdCount()), 1);
      await read.release();
    });
    const error = await rw.readLock().runExclusive(() => rejects(rw.writeLock().acquire()));
    assert.instance(error, LockError);
    assert.is(error.code, 'ERR_LOCK_UPGRADE');
    assert.is(await rw.readLock().isLocked(), false);
  });

  it('gives back a partial attempt: taken on 1 of 3 while another writer holds the other 2, nothing of it left on any master', async () => {
    const client = m.client();
    const name = uniqueName('rrw');
    for (const admin of m.admins.slice(0, 2)) await fakeWriter(admin, name, 'someone:else');
    for (const side of ['read', 'write'] as const) {
      const lock = side === 'read' ? client.readWriteLock(name).readLock() : client.readWriteLock(name).writeLock();
      assert.is(await lock.tryAcquire(), null, side);
      await eventually(async () => (await holdsOn(m.admins[2]!, name)).length === 0, `the ${side} attempt given back on master 2`, 2_000);
    }
    for (const admin of m.admins.slice(0, 2)) assert.equal(await holdsOn(admin, name), ['w:someone:else'], 'the other writer is left alone');
    // With a wait: every failed attempt gives back what it took; the lock comes once the other writer leaves.
    const waiting = client.readWriteLock(name).writeLock().acquire({ waitMs: 3_000 });
    waiting.catch(() => undefined); // awaited below; settled at close() if the test fails first
    await sleep(100);
    assert.equal(await holdsOn(m.admins[2]!, name), [], 'nothing left on master 2 between attempts');
    for (const admin of m.admins.slice(0, 2)) await admin.del(rwKeys(name).hash, rwKeys(name).leases);
    await m.admins[0]!.publish(rwKeys(name).toWriters, 'write');
    const lease = await within(waiting, 2_000, 'the writer once the other one left');
    await lease.release();
    await everywhere(name, [], 'nothing left anywhere');
  });

  it('retries a split at once (a writer on one master, another on a second: nobody will publish) and takes the lock when one leaves', async () => {
    const client = m.client();
    const name = uniqueName('rrw');
    await fakeWriter(m.admins[0]!, name, 'x:1');
    await fakeWriter(m.admins[1]!, name, 'y:1');
    const waiting = client.readWriteLock(name).readLock().acquire({ waitMs: 3_000 });
    waiting.catch(() => undefined); // awaited below; settled at close() if the test fails first
    await sleep(100);
    await m.admins[1]!.del(rwKeys(name).hash, rwKeys(name).leases); // no publish: only the split retry finds it
    const lease = await within(waiting, 1_000, 'the reader after the split ended');
    assert.ok((await holdsOn(m.admins[1]!, name)).length === 1 && (await holdsOn(m.admins[2]!, name)).length === 1, 'held on masters 1 and 2');
    await lease.release();
  });

  for (const index of [0, 2]) {
    it(`wakes waiting readers and writers on a release published by master ${index} alone`, async () => {
      const [a, b] = [m.client(), m.client()];
      const name = uniqueName('rrw');
      await a.readWriteLock(name).writeLock().acquire(); // 30 s watchdog lease: only a wake-up makes the waiters quick
      const reader = b.readWriteLock(name).readLock().acquire();
      reader.catch(() => undefined); // awaited below; settled at close() if the test fails first
      await eventually(() => b.waiting === 1, 'the reader waits');
      await sleep(50);
      await a.close(); // stops renewing; its keys stay for the lease
      for (const admin of m.admins) await admin.del(rwKeys(name).hash, rwKeys(name).leases);
      const started = performance.now();
      await m.admins[index]!.publish(rwKeys(name).toReaders, 'write');
      const lease = await within(reader, 2_000, 'the reader');
      assert.ok(performance.now() - started < 1_000);
      const writer = b.readWriteLock(name).writeLock().acquire();
      writer.catch(() => undefined); // awaited below; settled at close() if the test fails first
      await eventually(() => b.waiting === 1, 'the writer waits');
      await sleep(50);
      for (const admin of m.admins) await admin.del(rwKeys(name).hash, rwKeys(name).leases);
      await m.admins[index]!.publish(rwKeys(name).toWriters, 'read');
      await (await within(writer, 2_000, 'the writer')).release();
      await lease.release().catch(() => undefined); // its keys were deleted under it
    });
  }

  it('renews on every master (a 1 s watchdog lease held for 2.5 s), and aborts lease.signal when a majority no longer holds it', async () => {
    // A 1 s lease, renewed every 333 ms: a busy machine's stalls (the test matrix runs cells side by
    // side on two cores) do not lose it, as they lost a 300 ms one.
    const client = m.client({ leaseMs: 1_000 });
    const name = uniqueName('rrw');
    const lease = await client.readWriteLock(name).readLock().acquire();
    await sleep(2_500);
    assert.is(lease.signal.aborted, false);
    const [member] = await holdsOn(m.admins[0]!, name);
    for (const admin of m.admins) assert.ok(Number(await admin.zscore(rwKeys(name).leases, member!)) > (await timeMs(admin)), 'a live lease on every master');
    const drop = async (admin: Redis) => {
      await admin.zrem(rwKeys(name).leases, member!);
      await admin.hdel(rwKeys(name).hash, member!);
    };
    await drop(m.admins[0]!);
    await sleep(1_500);
    assert.is(lease.signal.aborted, false, 'one of three lost: still a majority, past a whole lease');
    await drop(m.admins[1]!);
    assert.instance(await abortedWith(lease.signal, 2_000, 'the signal'), LockLostError);
    assert.instance(await rejects(lease.release()), LockError);
  });

  it('is a member of multiLock(): a write side and a lock taken all or none, a reader of the side kept out meanwhile', async () => {
    const client = m.client();
    const [x, y] = [uniqueName('rrw'), uniqueName('rrw')];
    const both = client.multiLock([client.readWriteLock(x).writeLock(), client.lock(y)]);
    const lease = await both.acquire();
    const reader = m.client().readWriteLock(x).readLock();
    assert.is(await reader.tryAcquire(), null, 'write-locked on a majority');
    await lease.release();
    const read = await within(reader.acquire({ waitMs: 2_000 }), 3_000, 'the read after the multi-lock release');
    await read.release();
  });

  it('lets the Lua produce its Redlock replies: a floor token, named holders, the fence write-back, the rollback', async () => {
    const admin = m.admins[0]!;
    const k = rwKeys(uniqueName('rrw'));
    const run = (script: { source: string }, keys: string[], args: (string | number)[]) => admin.eval(script.source, keys.length, ...keys, ...args);
    const read = (owner: string, floor = '', waitId = `wait-${owner}`) =>
      run(lua.readAcquire, [k.hash, k.leases, k.intents, k.waiting, k.batch, k.fence], [owner, 30_000, 60_000, waitId, '', 1_000, floor, 1]);
    const write = (owner: string, floor = '', waitId = `wait-${owner}`) => run(lua.writeAcquire, [k.hash, k.leases, k.intents, k.batch, k.fence], [owner, 30_000, 60_000, waitId, 1_500, floor, 1]);
    const floor = String(8_000_000_000_000_000 + 123);
    assert.is(await write('w1', floor), floor, 'the floor, as given, above the fence');
    const refusal = (await write('w2')) as [number, number, number, string];
    assert.equal([refusal[0], refusal[1] > 29_000, refusal[2], refusal[3]], [0, true, 0, 'w:w1'], 'a writer refused by a writer names it');
    const [flag, , holder] = (await read('r1')) as [number, number, string];
    assert.equal([flag, holder], [0, 'w:w1'], 'a reader refused by a writer names it');
    assert.is(Number(await run(rwLua.quorumFenceUp, [k.hash, k.leases, k.fence], ['w:w1', 8_000_000_000_000_999, 60_000])), 1);
    assert.is(await admin.get(k.fence), '8000000000000999', 'the fence raised while the hold is live');
    assert.is(Number(await run(rwLua.quorumFenceUp, [k.hash, k.leases, k.fence], ['w:nobody', 9_000_000_000_000_000, 60_000])), 0, 'not without the hold');
    assert.is(Number(await run(rwLua.quorumRollback, [k.hash, k.leases], ['w:w1'])), 1);
    assert.is(await admin.exists(k.hash, k.leases), 0, 'the writer and the keys gone with its hold');
    assert.is(Number(await run(rwLua.quorumRollback, [k.hash, k.leases], ['w:w1'])), 0, 'nothing held: nothing written');
    assert.is(Number(await read('r1')), 8_000_000_000_001_000, 'INCR above a floor below the fence');
    const [, , intent, shared] = (await write('w3')) as [number, number, number, string];
    assert.equal([intent, shared], [1, ''], 'refused by readers: an intent, no holder named');
    const behind = (await read('r2')) as [number, number, string];
    assert.equal([behind[0], behind.length, behind[2]], [0, 3, ''], 'a reader refused by an intent names no holder');
    // A release and a leave that publish nothing ("" as the command), and with a message given.
    const release = (member: string, publish: string, message: string) =>
      run(lua.release, [k.hash, k.leases, k.waiting, k.batch, k.toReaders, k.toWriters, k.intents], [member, 1, 1, publish, 500, message]);
    assert.is(Number(await release('r:r1', '', '')), 0);
    assert.is(Number(await run(lua.leave, [k.intents, k.waiting, k.batch, k.toReaders, k.toWriters], ['wait-w3', '', ''])), 0, 'the last intent left, nothing published');
    const subscriber = admin.duplicate();
    try {
      const heard: string[] = [];
      subscriber.on('message', (_channel: string, message: string) => heard.push(message));
      await subscriber.subscribe(k.toWriters, k.toReaders);
      assert.ok(Number(await write('w4')) > 0);
      assert.is(Number(await release('w:w4', 'publish', 'rl:test:1')), 0, 'published on both channels (a reader waits)');
      assert.ok(Number(await read('r3')) > 0);
      assert.is(Number(await run(lua.forceRelease, [k.hash, k.leases, k.waiting, k.batch, k.toReaders, k.toWriters], ['r', 'publish', 500, 'rl:test:2'])), 1);
      await eventually(() => heard.length === 3, 'the release and the force-release published');
      assert.equal(heard, ['rl:test:1', 'rl:test:1', 'rl:test:2']);
    } finally {
      subscriber.disconnect();
    }
  });
});

describe('Redlock read-write lock with masters down (3 masters)', (it) => {
  const m = setupMasters(it, 3);

  it('reads and writes with one master down; rejects with ERR_LOCK_NO_QUORUM naming the two down, leaving nothing on the live one', async () => {
    const client = m.client();
    await (await client.readWriteLock(uniqueName('rrw')).writeLock().acquire()).release(); // connected to all
    await m.servers[1]!.kill();
    try {
      const rw = client.readWriteLock(uniqueName('rrw'));
      const write = await within(rw.writeLock().acquire(), 5_000, 'a write with a minority down');
      assert.is(await rw.readLock().tryAcquire(), null);
      await write.release();
      const reads = await within(Promise.all([rw.readLock().acquire(), m.client().readWriteLock(rw.name).readLock().acquire()]), 5_000, 'two reads with a minority down');
      assert.ok(await rw.readLock().isLocked());
      for (const lease of reads) await lease.release();
      assert.is(await rw.readLock().isLocked(), false);
    } finally {
      await m.servers[1]!.restart();
    }
    await Promise.all([m.servers[0]!.kill(), m.servers[2]!.kill()]);
    try {
      const name = uniqueName('rrw');
      const rw = client.readWriteLock(name);
      for (const attempt of [() => rw.writeLock().acquire(), () => rw.readLock().tryAcquire(), () => rw.readLock().acquire({ waitMs: 1_500 })]) {
        const error = await within(rejects(attempt()), 6_000, 'an acquire with a majority down');
        assert.instance(error, LockError);
        assert.is(error.code, 'ERR_LOCK_NO_QUORUM');
        for (const down of [m.servers[0]!, m.servers[2]!]) assert.ok(error.message.includes(`${down.host}:${down.port}`), `${down.port} named in: ${error.message}`);
      }
      await eventually(async () => (await holdsOn(m.admins[1]!, name)).length === 0, 'nothing left on the live master', 2_000);
    } finally {
      await Promise.all([m.servers[0]!.restart(), m.servers[2]!.restart()]);
    }
  }, 30_000);

  it('keeps tokens increasing across write holders (and a read after each) whose majorities differ, masters restarted empty', async () => {
    const client = m.client();
    const name = uniqueName('rrw');
    // Fences far above the clock floor, so every token comes from the masters' counters.
    for (const admin of m.admins) await admin.set(rwKeys(name).fence, '8000000000000000', 'PX', 3_600_000);
    const tokens: number[] = [];
    let down = -1;
    for (const next of [2, 1, 0, 2]) {
      if (down >= 0) await m.servers[down]!.restart(); // without persistence: it forgets its fence
      await m.servers[next]!.kill();
      down = next;
      const rw = client.readWriteLock(name);
      const write: Lease = await within(rw.writeLock().acquire({ waitMs: 5_000 }), 8_000, `the write with master ${next} down`);
      tokens.push(write.fencingToken);
      await write.release();
      const read = await within(rw.readLock().acquire({ waitMs: 5_000 }), 8_000, `the read with master ${next} down`);
      tokens.push(read.fencingToken);
      await read.release();
    }
    await m.servers[down]!.restart();
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `token ${i}: ${tokens.join(', ')}`);
    assert.ok(tokens[0]! > 8_000_000_000_000_000);
  }, 30_000);

  it('aborts lease.signal when a majority of masters goes down while held, not for one', async () => {
    const client = m.client({ leaseMs: 600 });
    const lease = await client.readWriteLock(uniqueName('rrw')).writeLock().acquire();
    await m.servers[0]!.kill();
    try {
      await sleep(700);
      assert.is(lease.signal.aborted, false, 'one of three down: still renewed on a majority');
      const killedAt = performance.now();
      await m.servers[1]!.kill();
      assert.instance(await abortedWith(lease.signal, 2_000, 'the signal'), LockLostError);
      assert.ok(performance.now() - killedAt < 600, `lost ${Math.round(performance.now() - killedAt)} ms after the second kill: within one lease`);
    } finally {
      await Promise.all([m.servers[0]!.restart(), m.servers[1]!.restart()]);
    }
  });
});
