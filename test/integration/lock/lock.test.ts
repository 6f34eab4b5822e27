import * as assert from 'uvu/assert';
import { LockLostError, LockNotHeldError, LockTimeoutError, type Lease } from '../../../src/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { commandStats, setup, sleep } from '../../helpers/fixture.ts';



describe('Lock#acquire', (it) => {
  const s = setup(it);

  it('acquires a free lock and releases it', async () => {
    const lock = s.client.lock(uniqueName());
    const lease = await lock.acquire();
    assert.is(lease.name, lock.name);
    assert.is(lease.holdCount, 1);
    assert.ok(Number.isSafeInteger(lease.fencingToken) && lease.fencingToken > 0);
    assert.is(lease.signal.aborted, false);
    assert.ok(await lock.isLocked());
    await lease.release();
    assert.not.ok(await lock.isLocked());
    assert.is(await lock.remainingTtlMs(), null);
  });

  it('writes the hash field <clientId>:<contextId> with a count and the watchdog lease', async () => {
    const name = uniqueName();
    const lease = await s.client.lock(name).acquire();
    const hash = await s.f.admin.hgetall(`relock:{${name}}`);
    const [field, count] = Object.entries(hash)[0]!;
    assert.ok(field.startsWith(`${s.client.id}:`));
    assert.is(count, '1');
    const pttl = await s.f.admin.pttl(`relock:{${name}}`);
    assert.ok(pttl > 25_000 && pttl <= 30_000, `pttl ${pttl}`);
    assert.is(await s.f.admin.get(`relock:{${name}}:fence`), String(lease.fencingToken));
    await lease.release();
  });

  it('rejects with LockTimeoutError after waitMs when another client holds it', async () => {
    const name = uniqueName();
    const held = await s.other.lock(name).acquire();
    const started = performance.now();
    const error = await rejects(s.client.lock(name).acquire({ waitMs: 200 }));
    const waited = performance.now() - started;
    assert.instance(error, LockTimeoutError);
    assert.is(error.code, 'ERR_LOCK_TIMEOUT');
    assert.is(error.lockName, name);
    assert.ok(waited >= 190, `gave up after ${waited} ms`);
    assert.is(s.client.waiting, 0, 'the waiter left its queue');
    await held.release();
  });

  it('is woken by the release, long before the holder lease would have run out', async () => {
    const name = uniqueName();
    const held = await s.other.lock(name).acquire(); // watchdog lease: 30 s
    const waiting = s.client.lock(name).acquire();
    await eventually(() => s.client.waiting === 1, 'the waiter is queued');
    const releasedAt = performance.now();
    await held.release();
    const lease = await within(waiting, 5_000, 'the woken acquire');
    // Only the publish can wake it this early: its fallback timer is at the holder's PTTL (~30 s).
    assert.ok(performance.now() - releasedAt < 5_000);
    await lease.release();
  });

  it('takes a fresh context outside runExclusive: two acquires in one process exclude each other', async () => {
    const lock = s.client.lock(uniqueName());
    const first = await lock.acquire();
    assert.is(await lock.tryAcquire(), null);
    const second = lock.acquire();
    await eventually(() => s.client.waiting === 1, 'the second acquire waits');
    await first.release();
    const lease = await within(second, 5_000, 'second acquire');
    assert.is(lease.holdCount, 1);
    assert.ok(lease.fencingToken > first.fencingToken);
    await lease.release();
  });

  it('tries once with waitMs 0', async () => {
    const name = uniqueName();
    const held = await s.other.lock(name).acquire();
    assert.instance(await rejects(s.client.lock(name).acquire({ waitMs: 0 })), LockTimeoutError);
    await held.release();
    const lease = await s.client.lock(name).acquire({ waitMs: 0 });
    await lease.release();
  });
});

describe('Lock#tryAcquire', (it) => {
  const s = setup(it);

  it('returns a lease when free and null when held elsewhere', async () => {
    const name = uniqueName();
    const lease = await s.client.lock(name).tryAcquire();
    assert.ok(lease);
    assert.is(await s.other.lock(name).tryAcquire(), null);
    await lease!.release();
    const again = await s.other.lock(name).tryAcquire({ leaseMs: 5_000 });
    assert.ok(again);
    assert.ok((await s.other.lock(name).remainingTtlMs())! <= 5_000);
    await again!.release();
  });
});

describe('Reentrancy', (it) => {
  const s = setup(it);

  it('re-enters three deep in runExclusive, counting holds under one fencing token', async () => {
    const lock = s.client.lock(uniqueName());
    const seen: { count: number; token: number; redis: number }[] = [];
    await lock.runExclusive(async (outer) => {
      seen.push({ count: outer.holdCount, token: outer.fencingToken, redis: await lock.holdCount() });
      await lock.runExclusive(async (middle) => {
        seen.push({ count: middle.holdCount, token: middle.fencingToken, redis: await lock.holdCount() });
        const inner = await lock.acquire({ waitMs: 0 });
        seen.push({ count: inner.holdCount, token: inner.fencingToken, redis: await lock.holdCount() });
        await inner.release();
        assert.is(await lock.holdCount(), 2);
      });
      assert.is(await lock.holdCount(), 1);
      assert.ok(await lock.isHeldByCurrentContext());
    });
    assert.equal(
      seen.map((s) => [s.count, s.redis]),
      [
        [1, 1],
        [2, 2],
        [3, 3],
      ],
    );
    assert.is(new Set(seen.map((s) => s.token)).size, 1);
    assert.not.ok(await lock.isLocked());
  });

  it('frees the lock and wakes waiters only when the count reaches 0', async () => {
    const name = uniqueName();
    const lock = s.client.lock(name);
    const outer = await lock.acquire();
    let woken = false;
    const waiting = s.other
      .lock(name)
      .acquire()
      .then((lease) => ((woken = true), lease));
    await eventually(() => s.other.waiting === 1, 'the other client waits');
    const inner = await outer.run(() => lock.acquire());
    assert.is(inner.holdCount, 2);
    await inner.release();
    await sleep(100);
    assert.not.ok(woken, 'a partial release must not wake waiters');
    assert.ok(await lock.isLocked());
    await outer.release();
    await (await within(waiting, 5_000, 'waiter after the full release')).release();
  });

  it('gives explicit-style code the lease context through lease.run', async () => {
    const lock = s.client.lock(uniqueName());
    const lease = await lock.acquire();
    assert.is(await lock.holdCount(), 0, 'outside run the context holds nothing');
    assert.not.ok(await lock.isHeldByCurrentContext());
    const count = await lease.run(async () => {
      const nested = await lock.acquire({ waitMs: 0 });
      const holds = await lock.holdCount();
      await nested.release();
      return holds;
    });
    assert.is(count, 2);
    await lease.release();
  });

  it('does not let concurrent siblings inside one context share a nested lock', async () => {
    const outer = s.client.lock(uniqueName());
    const inner = s.client.lock(uniqueName());
    let inside = 0;
    let overlapped = false;
    await outer.runExclusive(() =>
      Promise.all(
        [1, 2, 3].map(() =>
          inner.runExclusive(async () => {
            if (++inside > 1) overlapped = true;
            await sleep(20);
            inside--;
          }),
        ),
      ),
    );
    assert.not.ok(overlapped);
  });

  it('does not re-enter a lock held by another client', async () => {
    const name = uniqueName();
    const held = await s.other.lock(name).acquire();
    await held.run(async () => {
      assert.is(await s.client.lock(name).tryAcquire(), null);
    });
    await held.release();
  });
});

describe('Lease', (it) => {
  const s = setup(it, { leaseMs: 600 });

  it('ends a fixed lease on Redis and aborts its signal with LockLostError', async () => {
    const lock = s.client.lock(uniqueName());
    const lease = await lock.acquire({ leaseMs: 300 });
    const reason = await within(
      new Promise((resolve) => lease.signal.addEventListener('abort', () => resolve(lease.signal.reason), { once: true })),
      3_000,
      'signal abort',
    );
    assert.instance(reason, LockLostError);
    assert.is((reason as LockLostError).code, 'ERR_LOCK_LOST');
    await eventually(async () => !(await lock.isLocked()), 'the key expires on Redis');
    const error = await rejects(lease.release());
    assert.instance(error, LockNotHeldError);
    assert.is(error.code, 'ERR_LOCK_NOT_HELD');
  });

  it('is kept alive by the watchdog for ten lease lengths', async () => {
    const short = s.f.client({ leaseMs: 300 });
    const lock = short.lock(uniqueName());
    const lease = await lock.acquire(); // lease 300 ms, renewed every 100 ms
    await sleep(3_000);
    assert.not.ok(lease.signal.aborted);
    const ttl = (await lock.remainingTtlMs())!;
    assert.ok(ttl > 0 && ttl <= 300, `ttl ${ttl}`);
    assert.is(await s.other.lock(lock.name).tryAcquire(), null);
    await lease.release();
    assert.not.ok(await lock.isLocked());
  });

  it('signals the loss when the hold is deleted behind its back', async () => {
    const lock = s.client.lock(uniqueName());
    const lease = await lock.acquire();
    await s.f.admin.del(`relock:{${lock.name}}`);
    await eventually(() => lease.signal.aborted, 'the watchdog notices at its next renewal', 2_000);
    assert.instance(lease.signal.reason, LockLostError);
    assert.instance(await rejects(lease.release()), LockNotHeldError);
  });

  it('rejects a second release without touching Redis', async () => {
    const lock = s.client.lock(uniqueName());
    const lease = await lock.acquire();
    await lease.release();
    const again = await s.other.lock(lock.name).acquire();
    const error = await rejects(lease.release());
    assert.instance(error, LockNotHeldError);
    assert.ok(await s.other.lock(lock.name).isLocked(), 'the other holder keeps the lock');
    await again.release();
  });

  it('releases on leaving an `await using` block', async () => {
    const lock = s.client.lock(uniqueName());
    {
      await using lease = await lock.acquire();
      assert.ok(lease.fencingToken > 0);
      assert.ok(await lock.isLocked());
    }
    assert.not.ok(await lock.isLocked());
    // disposing a lease that was released explicitly is a no-op
    {
      await using lease = await lock.acquire();
      await lease.release();
    }
    assert.not.ok(await lock.isLocked());
  });
});

describe('Lock#runExclusive', (it) => {
  const s = setup(it, { leaseMs: 600 });

  it('returns what fn returns and releases', async () => {
    const lock = s.client.lock(uniqueName());
    assert.is(await lock.runExclusive(async (lease) => lease.holdCount + 41), 42);
    assert.not.ok(await lock.isLocked());
  });

  it('releases and rethrows when fn throws', async () => {
    const lock = s.client.lock(uniqueName());
    const boom = new Error('boom');
    assert.is(await rejects(lock.runExclusive(() => Promise.reject(boom))), boom);
    assert.not.ok(await lock.isLocked());
  });

  it('rejects with LockLostError when the hold was lost while fn ran', async () => {
    const lock = s.client.lock(uniqueName());
    const error = await rejects(
      lock.runExclusive(async (lease) => {
        await lock.forceUnlock();
        assert.ok(lease.signal.aborted, 'forceUnlock by this client aborts at once');
        return 'done';
      }),
    );
    assert.instance(error, LockLostError);
  });
});

describe('Lock#forceUnlock', (it) => {
  const s = setup(it, {}, { leaseMs: 1_500 });

  it('deletes whatever holds it, wakes waiters, and answers whether it was locked', async () => {
    const name = uniqueName();
    const held = await s.other.lock(name).acquire();
    const waiting = s.client.lock(name).acquire();
    await eventually(() => s.client.waiting === 1, 'waiter queued');
    assert.is(await s.client.lock(name).forceUnlock(), true);
    const lease = await within(waiting, 5_000, 'woken by the force unlock');
    await eventually(() => held.signal.aborted, 'the old holder learns at its next renewal', 3_000);
    assert.instance(await rejects(held.release()), LockNotHeldError);
    await lease.release();
    assert.is(await s.client.lock(name).forceUnlock(), false);
  });
});

describe('Crashed holder', (it) => {
  const s = setup(it);

  it('waits out the lease of a holder that never releases, without polling', async () => {
    const name = uniqueName();
    // A "client" that crashed while holding: its hash, with 400 ms left.
    await s.f.admin.hset(`relock:{${name}}`, 'dead-client:dead-context', 1);
    await s.f.admin.pexpire(`relock:{${name}}`, 400);
    const before = Number((await s.f.admin.info('commandstats')).match(/cmdstat_evalsha:calls=(\d+)/)?.[1] ?? 0);
    const started = performance.now();
    const lease = await within(s.client.lock(name).acquire(), 5_000, 'acquire after the crash');
    const waited = performance.now() - started;
    const after = Number((await s.f.admin.info('commandstats')).match(/cmdstat_evalsha:calls=(\d+)/)?.[1] ?? 0);
    assert.ok(waited >= 300, `acquired after ${waited} ms`);
    // First try, the head's try after SUBSCRIBE, and the try when the PTTL timer fires.
    assert.ok(after - before <= 3, `${after - before} attempts`);
    await lease.release();
  });
});

describe('Waiters behind holds that expire', (it) => {
  const s = setup(it);

  it('bounds the next waiter by the lease its predecessor took, when nothing is ever released', async () => {
    const name = uniqueName();
    await s.other.lock(name).acquire({ leaseMs: 300 }); // never released
    const first = s.client.lock(name).acquire({ leaseMs: 300 }); // never released either
    await eventually(() => s.client.waiting === 1, 'the head queued');
    const second = s.client.lock(name).acquire({ waitMs: 5_000, leaseMs: 300 });
    await within(first, 2_000, 'the head, after the first lease ran out');
    // Nothing publishes: the second wakes when the head's 300 ms lease could have run out, not
    // after the client's 30 s leaseMs.
    const lease = await within(second, 2_000, 'the second, after the head lease ran out');
    assert.ok(lease.fencingToken > 0);
  });
});

describe('Foreign holder with a long lease', (it) => {
  const s = setup(it);

  it('sleeps through a PTTL longer than a timer can hold instead of spinning', async () => {
    const name = uniqueName();
    await s.f.admin.hset(`relock:{${name}}`, 'someone:else', 1);
    await s.f.admin.pexpire(`relock:{${name}}`, 30 * 24 * 3_600_000); // 30 days > 2^31 - 1 ms
    const before = Number((await s.f.admin.info('commandstats')).match(/cmdstat_evalsha:calls=(\d+)/)?.[1] ?? 0);
    assert.instance(await rejects(s.client.lock(name).acquire({ waitMs: 300 })), LockTimeoutError);
    const after = Number((await s.f.admin.info('commandstats')).match(/cmdstat_evalsha:calls=(\d+)/)?.[1] ?? 0);
    assert.ok(after - before <= 2, `${after - before} attempts in 300 ms`);
  });
});

describe('Fencing tokens', (it) => {
  const s = setup(it);

  it('strictly increase across clients and across the expiry of the fence key', async () => {
    const name = uniqueName();
    const tokens: number[] = [];
    for (let i = 0; i < 6; i++) {
      const lease = await (i % 2 ? s.client : s.other).lock(name).acquire();
      tokens.push(lease.fencingToken);
      await lease.release();
      if (i === 2) await s.f.admin.del(`relock:{${name}}:fence`); // as if it expired
    }
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `${tokens}`);
  });

  it('stay exact above 2^52, where Lua number-to-string conversion would round', async () => {
    const name = uniqueName();
    await s.f.admin.set(`relock:{${name}}:fence`, '4503599627370497'); // 2^52 + 1
    const lease = await s.client.lock(name).acquire();
    assert.is(lease.fencingToken, 4503599627370498);
    await lease.release();
    await s.f.admin.set(`relock:{${name}}:fence`, '1125899906842623'); // 2^50 - 1, below Redis TIME in µs
    const next = await s.client.lock(name).acquire();
    assert.is(String(next.fencingToken), await s.f.admin.get(`relock:{${name}}:fence`));
    assert.ok(next.fencingToken > 1125899906842623);
    await next.release();
  });

  it('leaves the fence key with an expiry', async () => {
    const name = uniqueName();
    await (await s.client.lock(name).acquire()).release();
    const ttl = await s.f.admin.pttl(`relock:{${name}}:fence`);
    assert.ok(ttl > 3_500_000 && ttl <= 3_600_000, `fence ttl ${ttl}`);
  });
});

describe('Lease#run', (it) => {
  const s = setup(it);

  it('rejects a non-function with a TypeError naming fn', async () => {
    const lease = await s.client.lock(uniqueName()).acquire();
    const error = await rejects(lease.run('not a function' as never));
    assert.instance(error, TypeError);
    assert.ok(error.message.includes('`fn`'), error.message);
    await lease.release();
  });
});

describe('Edge cases of re-entry and release', (it) => {
  const s = setup(it);

  it('never shortens a fixed lease, on Redis or locally, when a nested acquire asks for less', async () => {
    const lock = s.client.lock(uniqueName());
    const outer = await lock.acquire({ leaseMs: 1_000 });
    const nested = await outer.run(() => lock.acquire({ leaseMs: 200 }));
    await sleep(500);
    assert.not.ok(outer.signal.aborted, 'the outer 1000 ms lease still stands at 500 ms');
    assert.ok((await lock.remainingTtlMs())! > 300);
    await eventually(() => outer.signal.aborted, 'the outer lease ends (its signal just before Redis)', 2_000);
    await eventually(async () => !(await lock.isLocked()), 'the key expires on Redis', 1_000);
    assert.instance(await rejects(nested.release()), LockNotHeldError);
  });

  it('does not give an expiry to a held key whose expiry was removed', async () => {
    const lock = s.client.lock(uniqueName());
    await lock.runExclusive(async () => {
      await s.f.admin.persist(`relock:{${lock.name}}`);
      const nested = await lock.acquire();
      assert.is(await lock.remainingTtlMs(), Number.POSITIVE_INFINITY);
      await nested.release();
      assert.ok(await lock.isLocked());
    });
    assert.not.ok(await lock.isLocked());
  });

  it('reports a hold lost unnoticed until its final release as LockLostError from runExclusive', async () => {
    const lock = s.client.lock(uniqueName());
    const error = await rejects(
      lock.runExclusive(async () => {
        await s.f.admin.del(`relock:{${lock.name}}`); // the watchdog renews only every 10 s
      }),
    );
    assert.instance(error, LockLostError);
    assert.instance(error.cause, LockNotHeldError);
  });

  it('refuses a fence key of the wrong type before writing anything', async () => {
    for (const arrange of [
      (key: string) => s.f.admin.hset(key, 'a', 1),
      (key: string) => s.f.admin.set(key, 'not a number'),
    ]) {
      const lock = s.client.lock(uniqueName());
      await arrange(`relock:{${lock.name}}:fence`);
      const error = await rejects(lock.acquire());
      assert.ok(/WRONGTYPE|not a number/.test(error.message), error.message);
      assert.not.ok(await lock.isLocked(), 'no hold was left behind');
    }
  });

  it('keeps renewing every other hold when one lock key is overwritten with another type', async () => {
    // A 1 s lease (renewed every ~330 ms): a 300 ms one was lost to a loaded machine's stalls now and then.
    const fast = s.f.client({ leaseMs: 1_000 });
    const [victim, ...rest] = await Promise.all(Array.from({ length: 3 }, () => fast.lock(uniqueName()).acquire()));
    await s.f.admin.set(`relock:{${victim!.name}}`, 'overwritten');
    await eventually(() => victim!.signal.aborted, 'the overwritten hold is lost', 2_000);
    await sleep(2_000); // two lease lengths
    assert.ok(rest.every((lease) => !lease.signal.aborted), 'the others are still renewed');
    assert.is(await s.f.admin.get(`relock:{${victim!.name}}`), 'overwritten');
    await Promise.all(rest.map((lease) => lease.release()));
  });

  it('renews only holds, not acquires that are waiting', async () => {
    const name = uniqueName();
    const fast = s.f.client({ leaseMs: 300 });
    const held = await s.other.lock(name).acquire();
    const waits = Array.from({ length: 30 }, () => rejects(fast.lock(name).acquire({ waitMs: 1_500 })));
    await eventually(() => fast.waiting === 30, 'queued');
    const before = (await commandStats(s.f.admin)).hexists ?? 0;
    await sleep(1_000); // ten renewal periods of the waiting client
    const after = (await commandStats(s.f.admin)).hexists ?? 0;
    assert.ok(after - before < 5, `${after - before} renewals sent for waiters`);
    await Promise.all(waits);
    await held.release();
  });
});

describe("a lock's own maxHoldMs: client.lock(name, { maxHoldMs }), fairLock(), readWriteLock()'s sides, semaphore()", (it) => {
  // A 900 ms lease, renewed every 300 ms: a busy machine's stalls do not lose it before its bound.
  const s = setup(it, { leaseMs: 900 });
  const aborted = (signal: AbortSignal) => within(new Promise<LockLostError>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason as LockLostError), { once: true })), 3_000, 'the end of maxHoldMs');
  /** Each kind with a name and its options: what it hands out is acquired the same way. */
  const KINDS: Record<string, (name: string, options?: { maxHoldMs?: number }) => { acquire(options?: { maxHoldMs?: number }): Promise<Lease> }> = {
    lock: (name, options) => s.client.lock(name, options),
    fairLock: (name, options) => s.client.fairLock(name, options),
    'readWriteLock().writeLock': (name, options) => s.client.readWriteLock(name, options).writeLock(),
    'readWriteLock().readLock': (name, options) => s.client.readWriteLock(name, options).readLock(),
    semaphore: (name, options) => s.client.semaphore(name, { permits: 1, ...options }),
  };

  for (const [kind, make] of Object.entries(KINDS)) {
    it(`${kind}(): bounds its holds; an acquire's own bound wins; bad options are refused before any I/O`, async () => {
      const name = uniqueName();
      const lock = make(name, { maxHoldMs: 600 });
      const lease = await lock.acquire();
      assert.is((await aborted(lease.signal)).code, 'ERR_LOCK_MAX_HOLD');
      await lease.release().catch(() => undefined);
      // The same name without options: no bound (its watchdog renews past 600 ms).
      const free = await make(name).acquire();
      await sleep(800);
      assert.not.ok(free.signal.aborted, 'made without maxHoldMs, it is not bounded');
      await free.release();
      const longer = await lock.acquire({ maxHoldMs: 60_000 });
      await sleep(800);
      assert.not.ok(longer.signal.aborted, "the acquire's maxHoldMs wins over its own");
      await longer.release();
      assert.throws(() => make(name, { maxHoldMs: 0 }), (error: Error) => error instanceof RangeError && /maxHoldMs/.test(error.message));
      assert.throws(() => make(name, { holdMs: 5 } as never), (error: Error) => error instanceof TypeError && /holdMs/.test(error.message));
    });
  }
});
