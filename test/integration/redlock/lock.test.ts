// client.lock() on a Redlock client of 3 masters, all up: the layout on every master, held elsewhere,
// partial acquisitions rolled back, wake-ups from any master, reentrancy and renewal on all, the loss
// of a majority's holds, and the kinds a Redlock client refuses.
import diagnostics_channel from 'node:diagnostics_channel';
import * as assert from 'uvu/assert';
import { LockClient, LockError, LockLostError, LockTimeoutError } from '../../../src/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { sleep } from '../../helpers/fixture.ts';
import { lockKey, setupMasters } from './masters.ts';

/** An acquire settles at a majority: the last master's copy of the hold may land a moment later. */
const onEvery = (admins: { exists(key: string): Promise<number> }[], name: string) =>
  eventually(async () => (await Promise.all(admins.map((admin) => admin.exists(lockKey(name))))).every((n) => n === 1), 'the hold on every master', 2_000);

describe('Redlock: new LockClient({ redis: [a, b, c] })', (it) => {
  const m = setupMasters(it, 3);

  it('refuses fewer than 3 servers, a server twice, and mixed clients and URLs, before any I/O', () => {
    const url = 'redis://127.0.0.1:6390';
    for (const redis of [[url], [url, 'redis://127.0.0.1:6391']]) {
      const error = (() => {
        try {
          new LockClient({ redis });
        } catch (caught) {
          return caught as Error;
        }
        return undefined;
      })();
      assert.instance(error, RangeError);
      assert.match(error!.message, /`redis`/);
      assert.match(error!.message, /at least 3/);
    }
    assert.throws(() => new LockClient({ redis: [url, 'redis://127.0.0.1:6391', url] }), (error: Error) => error instanceof TypeError && /127\.0\.0\.1:6390 twice/.test(error.message));
    assert.throws(
      () => new LockClient({ redis: [url, { host: '127.0.0.1', port: 6390 }, 'redis://127.0.0.1:6392'] }),
      (error: Error) => error instanceof TypeError && /twice/.test(error.message),
    );
    const admin = m.admins[0]!;
    assert.throws(
      () => new LockClient({ redis: [admin, 'redis://127.0.0.1:6391', 'redis://127.0.0.1:6392'] }),
      (error: Error) => error instanceof TypeError && /`redis`/.test(error.message) && /mixed/.test(error.message),
    );
    assert.throws(() => new LockClient({ redis: [url, 42, 'redis://127.0.0.1:6392'] as never }), (error: Error) => error instanceof TypeError && /redis\[1\]/.test(error.message));
  });

  it('holds the same layout on every master: the lock hash with the owner field, and the fence', async () => {
    const client = m.client();
    const name = uniqueName('rl');
    const lease = await client.lock(name).acquire();
    await onEvery(m.admins, name);
    for (const admin of m.admins) {
      const fields = await admin.hgetall(lockKey(name));
      assert.is(Object.keys(fields).length, 1);
      assert.ok(Object.keys(fields)[0]!.startsWith(`${client.id}:`));
      assert.is(Object.values(fields)[0], '1');
      assert.ok((await admin.pttl(lockKey(name))) > 25_000);
      assert.is(Number(await admin.get(`${lockKey(name)}:fence`)), lease.fencingToken);
    }
    await lease.release();
    // Released at a majority; the last master's release may land a moment later.
    await eventually(async () => (await Promise.all(m.admins.map((admin) => admin.exists(lockKey(name))))).every((n) => n === 0), 'released on every master', 2_000);
  });

  it('ends an acquire of a lock held elsewhere with LockTimeoutError saying it is held; tryAcquire gives null', async () => {
    const [a, b] = [m.client(), m.client()];
    const name = uniqueName('rl');
    const held = await a.lock(name).acquire();
    const error = await rejects(b.lock(name).acquire({ waitMs: 150 }));
    assert.instance(error, LockTimeoutError);
    assert.is(error.code, 'ERR_LOCK_TIMEOUT');
    assert.match(error.message, /held/);
    assert.is(await b.lock(name).tryAcquire(), null);
    await held.release();
    await (await b.lock(name).acquire({ waitMs: 1_000 })).release();
  });

  it('rolls a partial acquisition back: taken on 1 of 3, given back when the other 2 are held by another owner', async () => {
    const client = m.client();
    const name = uniqueName('rl');
    // Another owner on masters 0 and 1 (as a Redlock holder would be); master 2 is free.
    for (const admin of m.admins.slice(0, 2)) {
      await admin.hset(lockKey(name), 'someone:else', '1');
      await admin.pexpire(lockKey(name), 30_000);
    }
    const error = await rejects(client.lock(name).acquire({ waitMs: 0 }));
    assert.instance(error, LockTimeoutError);
    await eventually(async () => (await m.admins[2]!.exists(lockKey(name))) === 0, 'the acquirer key on master 2 is given back', 2_000);
    for (const admin of m.admins.slice(0, 2)) assert.equal(await admin.hgetall(lockKey(name)), { 'someone:else': '1' }, 'the other owner is left alone');
    // And with a wait: every failed attempt gives back what it took; the lock comes once the other owner leaves.
    const waiting = client.lock(name).acquire({ waitMs: 3_000 });
    await sleep(100);
    assert.is(await m.admins[2]!.exists(lockKey(name)), 0, 'nothing left on master 2 between attempts');
    for (const admin of m.admins.slice(0, 2)) await admin.del(lockKey(name));
    await m.admins[0]!.publish(`${lockKey(name)}:released`, 'release');
    await (await within(waiting, 2_000, 'the acquire once the other owner left')).release();
  });

  for (const index of [0, 1, 2]) {
    it(`wakes a waiter on a release published by master ${index} alone`, async () => {
      const [a, b] = [m.client(), m.client()];
      const name = uniqueName('rl');
      await a.lock(name).acquire(); // 30 s watchdog lease: only a wake-up makes the waiter quick
      const waiting = b.lock(name).acquire();
      await eventually(() => b.waiting === 1, 'queued');
      await sleep(50);
      await a.close(); // stops renewing; its keys stay for the lease
      for (const admin of m.admins) await admin.del(lockKey(name));
      const started = performance.now();
      await m.admins[index]!.publish(`${lockKey(name)}:released`, 'release');
      const lease = await within(waiting, 2_000, 'the waiter');
      assert.ok(performance.now() - started < 1_000);
      await lease.release();
    });
  }

  it('hears a release once, when a majority of masters has published it (one relock:wake, not three)', async () => {
    const [a, b] = [m.client(), m.client()];
    const name = uniqueName('rl');
    const held = await a.lock(name).acquire();
    let wakes = 0;
    const onWake = (message: unknown) => {
      if ((message as { clientId: string }).clientId === b.id) wakes++;
    };
    diagnostics_channel.subscribe('relock:wake', onWake);
    try {
      // Two waits of one client (lock() promises no order between them: each first tries on every
      // master, and the one answered first queues first).
      const waits = [b.lock(name).acquire(), b.lock(name).acquire()];
      await eventually(() => b.waiting === 2, 'two queued');
      // Subscribed on every master before the release: a copy published before its SUBSCRIBE landed
      // is not heard, and without a majority of copies the head gets in by its re-check instead.
      const channel = `${lockKey(name)}:released`;
      await eventually(async () => (await Promise.all(m.admins.map(async (admin) => Number(((await admin.call('PUBSUB', 'NUMSUB', channel)) as [string, number])[1])))).every((n) => n >= 1), 'subscribed on every master', 2_000);
      await held.release();
      const head = await within(Promise.race(waits.map((wait, i) => wait.then((lease) => ({ lease, i })))), 2_000, 'the head');
      await sleep(200);
      assert.is(wakes, 1, 'published on a majority, delivered once');
      await head.lease.release();
      await (await within(waits[1 - head.i]!, 2_000, 'the other')).release();
    } finally {
      diagnostics_channel.unsubscribe('relock:wake', onWake);
    }
  });

  it('re-enters in the holder context on every master, with the outer token', async () => {
    const client = m.client();
    const lock = client.lock(uniqueName('rl'));
    await lock.runExclusive(async (outer) => {
      const inner = await lock.acquire();
      assert.is(inner.holdCount, 2);
      assert.is(inner.fencingToken, outer.fencingToken);
      assert.is(await lock.holdCount(), 2);
      await eventually(
        async () => (await Promise.all(m.admins.map((admin) => admin.hgetall(lockKey(lock.name))))).every((fields) => Object.values(fields).join() === '2'),
        'a count of 2 on every master',
        2_000,
      );
      await inner.release();
      assert.is(await lock.holdCount(), 1);
    });
    assert.is(await lock.isLocked(), false);
  });

  it('renews on every master: a 1 s watchdog lease held for 2.5 s is never lost', async () => {
    const client = m.client({ leaseMs: 1_000 }); // renewed every 333 ms: a busy machine's stalls do not lose it
    const lease = await client.lock(uniqueName('rl')).acquire();
    await sleep(2_500);
    assert.is(lease.signal.aborted, false);
    for (const admin of m.admins) assert.ok((await admin.pttl(lockKey(lease.name))) > 0);
    await lease.release();
  });

  it('signals no loss for a fresh hold that a watchdog tick renewed while its acquire was at the gate: two clients contending for 3 s', async () => {
    // A waiter's acquire asks the gate master first: a renewal sent meanwhile reaches the other
    // masters before the acquire, finds nothing there, and may be answered after the majority took
    // the lock. Each client keeps a lease of another lock, so its watchdog ticks every 100 ms (a third
    // of the lease) whatever the loop does.
    const clients = [m.client({ leaseMs: 300 }), m.client({ leaseMs: 300 })];
    const ids = new Set(clients.map((client) => client.id));
    const keepers = await Promise.all(clients.map((client) => client.lock(uniqueName('keeper')).acquire({ waitMs: 5_000 })));
    const name = uniqueName('rl');
    let lost = 0;
    let rounds = 0;
    // Losses that a renewal's answer signalled (not renewed on a majority); a lease that a loaded
    // machine could not renew before its deadline is another loss, not counted here.
    const onLost = (message: unknown) => {
      const { clientId, error } = message as { clientId: string; error: Error };
      if (ids.has(clientId) && /expired or was force-unlocked while held/.test(error.message)) lost++;
    };
    diagnostics_channel.subscribe('relock:lost', onLost);
    try {
      const until = performance.now() + 3_000;
      await Promise.all(
        clients.map(async (client) => {
          while (performance.now() < until) {
            const lease = await client.lock(name).acquire({ waitMs: 5_000 });
            // Held a moment: the replies of a renewal sent during its attempt land while it is held.
            await sleep(1);
            // A lease lost meanwhile (whatever the cause) may be gone when released.
            await lease.release().catch((error: unknown) => {
              if (!lease.signal.aborted) throw error;
            });
            rounds++;
          }
        }),
      );
    } finally {
      diagnostics_channel.unsubscribe('relock:lost', onLost);
    }
    assert.is(lost, 0, `${lost} LockLostError in ${rounds} acquisitions`);
    assert.ok(rounds >= 20, `${rounds} acquisitions: the loops ran`);
    // A keeper that a loaded machine could not renew in time (300 ms leases) is lost, as above: not counted.
    for (const keeper of keepers) {
      await keeper.release().catch((error: unknown) => {
        if (!keeper.signal.aborted) throw error;
      });
    }
  }, 20_000);

  it('aborts lease.signal with LockLostError when a majority of masters no longer holds it, not for a minority', async () => {
    // A 1 s lease, renewed every 333 ms: a busy machine's stalls (the test matrix runs cells side by
    // side on two cores) do not lose it, as they lost a 300 ms one.
    const client = m.client({ leaseMs: 1_000 });
    const lease = await client.lock(uniqueName('rl')).acquire();
    await onEvery(m.admins, lease.name);
    await m.admins[0]!.del(lockKey(lease.name)); // a minority: still held
    await sleep(1_500);
    assert.is(lease.signal.aborted, false, 'one of three lost: still a majority, past a whole lease');
    await m.admins[1]!.del(lockKey(lease.name));
    const reason = await within(
      lease.signal.aborted ? Promise.resolve(lease.signal.reason) : new Promise((resolve) => lease.signal.addEventListener('abort', () => resolve(lease.signal.reason), { once: true })),
      2_000,
      'the signal',
    );
    assert.instance(reason, LockLostError);
    assert.instance(await rejects(lease.release()), LockError);
  });

  it('orders fencing tokens from holder to holder, across clients', async () => {
    const clients = [m.client(), m.client(), m.client()];
    const name = uniqueName('rl');
    let last = 0;
    for (let i = 0; i < 9; i++) {
      const lease = await clients[i % 3]!.lock(name).acquire({ waitMs: 2_000 });
      assert.ok(lease.fencingToken > last, `${lease.fencingToken} > ${last}`);
      last = lease.fencingToken;
      await lease.release();
    }
  });

  it('warns once per master whose maxmemory-policy may evict lock keys, naming that master', async () => {
    await m.admins[1]!.config('SET', 'maxmemory-policy', 'allkeys-lru');
    try {
      const client = m.client();
      const warnings: LockError[] = [];
      client.on('warning', (warning) => warnings.push(warning));
      await (await client.lock(uniqueName('rl')).acquire()).release();
      await (await client.lock(uniqueName('rl')).acquire()).release();
      await eventually(() => warnings.length > 0, 'the eviction warning', 2_000);
      await sleep(100);
      assert.is(warnings.length, 1, warnings.map((warning) => warning.message).join('; '));
      assert.is(warnings[0]!.code, 'ERR_LOCK_EVICTION_POLICY');
      assert.ok(warnings[0]!.message.includes(`allkeys-lru" on 127.0.0.1:${m.servers[1]!.port}`), warnings[0]!.message);
    } finally {
      await m.admins[1]!.config('SET', 'maxmemory-policy', 'noeviction');
    }
  });

  it('multiLock() takes its quorum locks all or none', async () => {
    const client = m.client();
    const [x, y] = [uniqueName('rl'), uniqueName('rl')];
    const held = await m.client().lock(y).acquire();
    const both = client.multiLock([client.lock(x), client.lock(y)]);
    assert.is(await both.tryAcquire(), null);
    assert.is(await m.admins[0]!.exists(lockKey(x)), 0, 'all or none');
    await held.release();
    // A release settles at a majority: until the last master has it too, an acquire there finds y
    // held and (rightly) takes a majority without it.
    await eventually(async () => (await Promise.all(m.admins.map((admin) => admin.exists(lockKey(y))))).every((n) => n === 0), 'y released on every master', 2_000);
    const lease = await both.acquire({ waitMs: 1_000 });
    await eventually(async () => (await Promise.all(m.admins.map((admin) => admin.exists(lockKey(x), lockKey(y))))).every((n) => n === 2), 'both on every master', 2_000);
    await lease.release();
  });
});
