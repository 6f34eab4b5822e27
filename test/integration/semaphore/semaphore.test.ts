// client.semaphore(): the limit under contention from several clients, permits per acquire, expiry
// of a crashed holder's permits, the watchdog, wake-ups counted per release, the stored limit,
// waiting, close(), and every reply its scripts list, against a private Redis.
import * as assert from 'uvu/assert';
import { subscribe, tracingChannel, unsubscribe } from 'node:diagnostics_channel';
import { Redis } from 'ioredis';
import { LockClient, LockError, LockLostError, LockNotHeldError, LockTimeoutError, type AcquireTraceContext, type Lease } from '../../../src/index.ts';
import * as lua from '../../../src/generated/semaphore.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { commandStats, setup, sleep } from '../../helpers/fixture.ts';
import { assertClosedBeforeCall } from '../../helpers/closed.ts';

const keysOf = (name: string) => {
  const sem = `relock:{${name}}:sem`;
  return { sem, leases: `${sem}:leases`, fence: `${sem}:fence`, channel: `${sem}:released` };
};

/** Resolves with the signal's reason once it aborts. */
const aborted = (signal: AbortSignal, ms: number, what: string) =>
  within(signal.aborted ? Promise.resolve(signal.reason) : new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true })), ms, what);

describe('LockClient#semaphore', (it) => {
  const s = setup(it);
  let fast: LockClient;
  it.before(() => {
    fast = s.f.client({ leaseMs: 300 });
  });
  /** Acquire and release scripts run (each reads the hash once with HMGET; renewals do not). */
  const attemptsAndReleases = async () => (await commandStats(s.f.admin)).hmget ?? 0;

  it('has its name and limit, and costs no I/O', () => {
    const name = uniqueName('sem');
    const semaphore = s.client.semaphore(name, { permits: 3 });
    assert.is(semaphore.name, name);
    assert.is(semaphore.permits, 3);
  });

  it('rejects a bad name or `permits` with a TypeError or RangeError naming it, before any I/O', async () => {
    const redis = new Redis({ host: s.f.server.host, port: s.f.server.port, lazyConnect: true });
    const client = new LockClient({ redis });
    const name = uniqueName('sem');
    const sem = client.semaphore(name, { permits: 3 });
    type Case = [label: string, call: () => unknown, error: typeof TypeError | typeof RangeError, mentions: string];
    const cases: Case[] = [
      ['no options', () => client.semaphore(name, undefined as never), TypeError, '`permits`'],
      ['permits missing', () => client.semaphore(name, {} as never), TypeError, '`permits`'],
      ['permits a string', () => client.semaphore(name, { permits: '3' as never }), TypeError, '`permits`'],
      ['permits 0', () => client.semaphore(name, { permits: 0 }), RangeError, '`permits`'],
      ['permits fractional', () => client.semaphore(name, { permits: 1.5 }), RangeError, '`1.5`'],
      ['permits Infinity', () => client.semaphore(name, { permits: Number.POSITIVE_INFINITY }), RangeError, '`permits`'],
      ['unknown option', () => client.semaphore(name, { permits: 1, limit: 2 } as never), TypeError, '`limit`'],
      ['empty name', () => client.semaphore('', { permits: 1 }), RangeError, '`name`'],
      ['acquire permits above the limit', () => sem.acquire({ permits: 4 }), RangeError, "the semaphore's limit"],
      ['acquire permits 0', () => sem.acquire({ permits: 0 }), RangeError, '`permits`'],
      ['acquire permits a string', () => sem.acquire({ permits: '1' as never }), TypeError, '`permits`'],
      ['acquire unknown option', () => sem.acquire({ count: 1 } as never), TypeError, '`count`'],
      ['acquire waitMs negative', () => sem.acquire({ waitMs: -1 }), RangeError, '`waitMs`'],
      ['tryAcquire permits above the limit', () => sem.tryAcquire({ permits: 5 }), RangeError, '`permits`'],
      ['tryAcquire waitMs', () => sem.tryAcquire({ waitMs: 0 } as never), TypeError, '`waitMs`'],
      ['runExclusive without fn', () => sem.runExclusive(undefined as never), TypeError, '`fn`'],
      ['runExclusive permits fractional', () => sem.runExclusive(() => 1, { permits: 2.5 }), RangeError, '`permits`'],
    ];
    for (const [what, call, ErrorClass, mentions] of cases) {
      let error: any;
      try {
        await call();
      } catch (caught) {
        error = caught;
      }
      assert.instance(error, ErrorClass, what);
      assert.ok(String(error.message).includes(mentions), `${what}: ${error?.message}`);
    }
    assert.is(redis.status, 'wait', 'no connection was attempted');
    await client.close();
    redis.disconnect();
  });

  it('never lets more than `permits` be held at once, under contention from three clients with mixed permits', async () => {
    const name = uniqueName('sem');
    const clients = [s.client, s.other, fast];
    let inside = 0;
    let peak = 0;
    let acquisitions = 0;
    const tokens = new Set<number>();
    await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const sem = clients[i % 3]!.semaphore(name, { permits: 3 });
        for (let round = 0; round < 5; round++) {
          const permits = (i + round) % 4 === 0 ? 2 : 1;
          await sem.runExclusive(
            async (lease) => {
              inside += permits;
              peak = Math.max(peak, inside);
              acquisitions++;
              tokens.add(lease.fencingToken);
              await sleep(2);
              inside -= permits;
            },
            { permits },
          );
        }
      }),
    );
    assert.is(acquisitions, 60);
    assert.ok(peak <= 3, `${peak} permits held at once, with a limit of 3`);
    assert.is(peak, 3, 'the checker saw the limit reached (it counts overlapping holders)');
    assert.is(tokens.size, 60, 'a fencing token per acquisition');
    assert.is(await s.client.semaphore(name, { permits: 3 }).availablePermits(), 3);
    assert.is(await s.f.admin.exists(keysOf(name).sem, keysOf(name).leases), 0, 'no key left once every lease is released');
  });

  it('takes `permits` per acquire, and availablePermits() counts what is left', async () => {
    const sem = s.client.semaphore(uniqueName('sem'), { permits: 5 });
    assert.is(await sem.availablePermits(), 5);
    const two = await sem.acquire({ permits: 2 });
    assert.is(two.holdCount, 1);
    assert.is(await sem.availablePermits(), 3);
    assert.is(await sem.tryAcquire({ permits: 4 }), null);
    const three = await sem.tryAcquire({ permits: 3, leaseMs: 5_000 });
    assert.ok(three);
    assert.is(await sem.availablePermits(), 0);
    assert.is(await sem.tryAcquire(), null);
    await two.release();
    assert.is(await sem.availablePermits(), 2);
    await three!.release();
    assert.is(await sem.availablePermits(), 5);
  });

  it('is not reentrant: a nested acquire in a lease context is a new lease, holdCount 1, with its own token', async () => {
    const sem = s.client.semaphore(uniqueName('sem'), { permits: 2 });
    await sem.runExclusive(async (outer) => {
      const inner = await sem.acquire({ waitMs: 0 });
      assert.is(inner.holdCount, 1);
      assert.ok(inner.fencingToken > outer.fencingToken);
      assert.is(await sem.tryAcquire(), null, 'both permits are taken: the nested acquire took the second');
      await inner.release();
    });
    assert.is(await sem.availablePermits(), 2);
  });

  it('issues fencing tokens that increase from acquisition to acquisition, across clients', async () => {
    const name = uniqueName('sem');
    const tokens: number[] = [];
    const held: Lease[] = [];
    for (const client of [s.client, s.other, fast, s.client]) {
      const lease = await client.semaphore(name, { permits: 2 }).acquire();
      tokens.push(lease.fencingToken);
      held.push(lease);
      if (held.length === 2) await held.shift()!.release();
    }
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `${tokens}`);
    await held[0]!.release();
  });

  it('gives a crashed holder\'s permits to the waiters once its lease ends, every waiter of the queue, not only its head', async () => {
    const name = uniqueName('sem');
    const crashed = s.f.client({ leaseMs: 300 });
    await crashed.semaphore(name, { permits: 3 }).acquire({ permits: 3 });
    await crashed.close(); // never released: its permits come back when the 300 ms lease ends
    const sem = s.client.semaphore(name, { permits: 3 });
    const started = performance.now();
    // The two behind the head sleep until a message wakes them (a 30 s lease otherwise): the head's
    // attempt prunes the ended lease and publishes the permits it leaves free.
    const head = sem.acquire();
    await eventually(() => s.client.waiting === 1, 'the head queued');
    const behind = [sem.acquire(), sem.acquire()]; // queued behind a waiter: no attempt, no hint of their own
    await eventually(() => s.client.waiting === 3, 'two more queued');
    const leases = await within(Promise.all([head, ...behind]), 3_000, 'three waiters after the crashed holder');
    const waited = performance.now() - started;
    assert.ok(waited >= 150, `acquired after ${waited} ms, while the crashed holder's lease still ran`);
    assert.is(await sem.availablePermits(), 0);
    await Promise.all(leases.map((lease) => lease.release()));
  });

  it('ends a fixed leaseMs: the signal aborts with LockLostError, the permits come back, and release() rejects', async () => {
    const sem = s.client.semaphore(uniqueName('sem'), { permits: 2 });
    const lease = await sem.acquire({ leaseMs: 300, permits: 2 });
    assert.is(await sem.availablePermits(), 0);
    assert.instance(await aborted(lease.signal, 2_000, 'the end of the fixed lease'), LockLostError);
    await eventually(async () => (await sem.availablePermits()) === 2, 'the permits back', 1_000);
    assert.instance(await rejects(lease.release()), LockNotHeldError);
  });

  it('keeps a lease without leaseMs alive past its lease through the watchdog', async () => {
    const name = uniqueName('sem');
    const lease = await fast.semaphore(name, { permits: 2 }).acquire(); // 300 ms, renewed every 100 ms
    // Released whatever happens: a lease left held would renew (script calls) through the tests after.
    await using _ = { [Symbol.asyncDispose]: () => (lease.signal.aborted ? Promise.resolve() : lease.release().catch(() => undefined)) };
    await sleep(1_000);
    assert.not.ok(lease.signal.aborted);
    const theirs = s.other.semaphore(name, { permits: 2 });
    assert.is(await theirs.availablePermits(), 1);
    assert.is(await theirs.tryAcquire({ permits: 2 }), null);
    const [owner] = await s.f.admin.zrange(keysOf(name).leases, '0', '0');
    const end = Number(await s.f.admin.zscore(keysOf(name).leases, owner!));
    const [seconds, micros] = await s.f.admin.time();
    const left = end - (Number(seconds) * 1000 + Math.floor(Number(micros) / 1000));
    assert.ok(left > 0 && left <= 300, `the lease ends in ${left} ms (Redis TIME): a lease from its last renewal, no more`);
    await lease.release();
    assert.is(await theirs.availablePermits(), 2);
  });

  it('wakes as many local waiters as permits came free, not the herd', async () => {
    const name = uniqueName('sem');
    const wakes: unknown[] = [];
    const onWake = (message: unknown) => void wakes.push(message);
    subscribe('relock:wake', onWake);
    try {
      const theirs = s.other.semaphore(name, { permits: 3 });
      const two = await theirs.acquire({ permits: 2 });
      const one = await theirs.acquire();
      const sem = s.client.semaphore(name, { permits: 3 });
      const acquired: Lease[] = [];
      const waits = Array.from({ length: 5 }, () => sem.acquire().then((lease) => void acquired.push(lease)));
      await eventually(() => s.client.waiting === 5, 'five queued');
      await sleep(100); // the head's try after subscribing has landed

      let before = await attemptsAndReleases();
      await two.release();
      await eventually(() => acquired.length === 2, 'two waiters have a permit');
      await sleep(150);
      assert.is(acquired.length, 2);
      assert.is(s.client.waiting, 3);
      assert.is((await attemptsAndReleases()) - before, 3, 'the release and two attempts: no waiter but the two woken tried');

      before = await attemptsAndReleases();
      await one.release();
      await eventually(() => acquired.length === 3, 'a third waiter has a permit');
      await sleep(150);
      assert.is(s.client.waiting, 2);
      assert.is((await attemptsAndReleases()) - before, 2, 'the release and one attempt');
      assert.is(wakes.filter((message) => (message as { name: string }).name === name).length, 2, 'one relock:wake per release message');

      for (let i = 0; i < 5; i++) {
        await eventually(() => acquired.length > i, `waiter ${i + 1}`);
        await acquired[i]!.release();
      }
      await Promise.all(waits);
    } finally {
      unsubscribe('relock:wake', onWake);
    }
  });

  it('serves a waiter that needs several permits once enough came free', async () => {
    const name = uniqueName('sem');
    const theirs = s.other.semaphore(name, { permits: 3 });
    const held = [await theirs.acquire(), await theirs.acquire(), await theirs.acquire()];
    let got: Lease | undefined;
    const waiting = s.client
      .semaphore(name, { permits: 3 })
      .acquire({ permits: 2 })
      .then((lease) => (got = lease));
    await eventually(() => s.client.waiting === 1, 'queued');
    await held[0]!.release();
    await sleep(100);
    assert.is(got, undefined, 'one permit is not enough');
    await held[1]!.release();
    await within(waiting, 2_000, 'the two-permit waiter after the second release');
    assert.is(await theirs.availablePermits(), 0);
    await got!.release();
    await held[2]!.release();
  });

  it('refuses another limit while leases live (ERR_LOCK_PERMITS_MISMATCH), and takes it once none is left', async () => {
    const name = uniqueName('sem');
    const three = s.client.semaphore(name, { permits: 3 });
    const five = s.other.semaphore(name, { permits: 5 });
    const lease = await three.acquire();
    for (const call of [() => five.acquire(), () => five.tryAcquire(), () => five.availablePermits()]) {
      const error = await rejects(call());
      assert.instance(error, LockError);
      assert.is(error.code, 'ERR_LOCK_PERMITS_MISMATCH');
      assert.ok(error.message.includes('3') && error.message.includes('`permits`'), error.message);
    }
    await lease.release();
    const taken = await five.acquire({ permits: 4 });
    assert.is(await five.availablePermits(), 1);
    assert.is((await rejects(three.tryAcquire())).code, 'ERR_LOCK_PERMITS_MISMATCH');
    await taken.release();
  });

  it('ends a wait at waitMs or on abort, leaving the queue and taking nothing', async () => {
    const name = uniqueName('sem');
    const held = await s.other.semaphore(name, { permits: 1 }).acquire();
    const sem = s.client.semaphore(name, { permits: 1 });
    const error = await rejects(sem.acquire({ waitMs: 200 }));
    assert.instance(error, LockTimeoutError);
    assert.is(error.lockName, name);
    assert.is(await sem.tryAcquire(), null);
    const controller = new AbortController();
    const waiting = rejects(sem.acquire({ signal: controller.signal }));
    await eventually(() => s.client.waiting === 1, 'queued');
    const reason = new Error('not needed');
    controller.abort(reason);
    assert.is(await within(waiting, 1_000, 'the aborted wait'), reason);
    assert.is(s.client.waiting, 0);
    await held.release();
    await sleep(50);
    assert.is(await sem.availablePermits(), 1, 'the ended waits took nothing');
  });

  it('close() rejects pending waits with an AbortError and ends the leases of that client', async () => {
    const name = uniqueName('sem');
    const client = s.f.client({ leaseMs: 300 });
    const sem = client.semaphore(name, { permits: 2 });
    const mine = await sem.acquire({ permits: 2 });
    const waits = [rejects(sem.acquire()), rejects(sem.runExclusive(() => undefined, { waitMs: 60_000 }))];
    await eventually(() => client.waiting === 2, 'two waits');
    await within(client.close(), 5_000, 'close()');
    for (const wait of waits) assert.is((await within(wait, 1_000, 'a pending wait')).name, 'AbortError');
    assert.instance(await aborted(mine.signal, 1_000, 'the held lease'), LockLostError);
    assertClosedBeforeCall(await rejects(sem.acquire()), 'an acquire after close()');
    const theirs = s.other.semaphore(name, { permits: 2 });
    await eventually(async () => (await theirs.availablePermits()) === 2, 'the permits back after the lease', 2_000);
  });

  it("traces acquires with kind 'semaphore', the fencing token and waitedMs", async () => {
    const contexts: AcquireTraceContext[] = [];
    const noop = () => undefined;
    const handlers = { start: noop, end: noop, asyncStart: noop, error: noop, asyncEnd: (context: unknown) => void contexts.push(context as AcquireTraceContext) };
    tracingChannel('relock:acquire').subscribe(handlers);
    try {
      const sem = s.client.semaphore(uniqueName('sem'), { permits: 1 });
      const lease = await sem.acquire();
      await lease.release();
      const context = contexts.find((c) => c.name === sem.name)!;
      assert.is(context.kind, 'semaphore');
      assert.is(context.clientId, s.client.id);
      assert.is(context.fencingToken, lease.fencingToken);
      assert.ok(typeof context.waitedMs === 'number');
    } finally {
      tracingChannel('relock:acquire').unsubscribe(handlers);
    }
  });

  it('keeps its keys apart from lock(name) of the same name', async () => {
    const name = uniqueName('sem');
    const lease = await s.client.semaphore(name, { permits: 1 }).acquire();
    const lock = await s.client.lock(name).acquire({ waitMs: 0 });
    await lock.release();
    await lease.release();
  });
});

describe('lua/semaphore: every reply its headers list', (it) => {
  const s = setup(it);
  /** Runs a semaphore script directly, as the runtime would. */
  const run = (script: { source: string }, keys: string[], args: (string | number)[]) => s.f.admin.eval(script.source, keys.length, ...keys, ...args);
  const owners = async (sem: string) => Object.keys(await s.f.admin.hgetall(sem)).filter((field) => field !== 'limit' && field !== 'held');

  it('acquire: {1, token} for an owner that holds a live lease already (a resent attempt): a new token, its lease untouched', async () => {
    const name = uniqueName('sem');
    const k = keysOf(name);
    const lease = await s.client.semaphore(name, { permits: 3 }).acquire();
    const [owner] = await owners(k.sem);
    const before = [await s.f.admin.hgetall(k.sem), await s.f.admin.zrange(k.leases, '0', '-1', 'WITHSCORES')];
    const [flag, token] = (await run(lua.acquire, [k.sem, k.leases, k.fence, k.channel], [owner!, 1, 3, 30_000, 60_000, 'publish'])) as [number, string];
    assert.is(flag, 1);
    assert.ok(Number(token) > lease.fencingToken, 'a token above every one issued before');
    assert.equal([await s.f.admin.hgetall(k.sem), await s.f.admin.zrange(k.leases, '0', '-1', 'WITHSCORES')], before, 'its permits and lease end as they were');
    await lease.release();
    assert.is(await s.client.semaphore(name, { permits: 3 }).availablePermits(), 3);
  });

  it('acquire: {0, -1} when the count says full but no lease is known; {1, token} otherwise', async () => {
    const k = keysOf(uniqueName('sem'));
    await s.f.admin.hset(k.sem, 'limit', 2, 'held', 2);
    assert.equal(await run(lua.acquire, [k.sem, k.leases, k.fence, k.channel], ['a:1', 1, 2, 30_000, 60_000, 'publish']), [0, -1]);
    await s.f.admin.del(k.sem);
    const [flag, token] = (await run(lua.acquire, [k.sem, k.leases, k.fence, k.channel], ['a:1', 1, 2, 30_000, 60_000, 'publish'])) as [number, string];
    assert.is(flag, 1);
    assert.ok(Number(token) > 0);
  });

  it('acquire: WRONGTYPE and FENCEOVERFLOW become their codes, and nothing is written', async () => {
    const name = uniqueName('sem');
    const k = keysOf(name);
    await s.f.admin.set(k.sem, 'not a semaphore');
    assert.is((await rejects(s.client.semaphore(name, { permits: 1 }).acquire({ waitMs: 0 }))).code, 'ERR_LOCK_WRONG_TYPE');
    await s.f.admin.del(k.sem);
    await s.f.admin.set(k.fence, '9007199254740993');
    assert.is((await rejects(s.client.semaphore(name, { permits: 1 }).acquire({ waitMs: 0 }))).code, 'ERR_LOCK_FENCE_OVERFLOW');
    await s.f.admin.set(k.fence, '12abc');
    assert.is((await rejects(s.client.semaphore(name, { permits: 1 }).acquire({ waitMs: 0 }))).code, 'ERR_LOCK_WRONG_TYPE');
    assert.is(await s.f.admin.exists(k.sem, k.leases), 0);
  });

  it('release: -1 for an owner without a live lease, n for the permits it gave back, publishing them', async () => {
    const name = uniqueName('sem');
    const k = keysOf(name);
    const listener = s.f.server.connect();
    const messages: string[] = [];
    listener.on('message', (_channel: string, message: string) => void messages.push(message));
    await listener.subscribe(k.channel);
    assert.is(await run(lua.release, [k.sem, k.leases, k.channel], ['nobody:1', 'publish']), -1);
    await s.client.semaphore(name, { permits: 4 }).acquire({ permits: 3 });
    const [owner] = await owners(k.sem);
    assert.is(await run(lua.release, [k.sem, k.leases, k.channel], [owner!, 'publish']), 3);
    await eventually(() => messages.length === 1, 'the release message');
    assert.equal(messages, ['3']);
    assert.is(await s.f.admin.exists(k.sem, k.leases), 0);
    listener.disconnect();
  });

  it('renew: 0 for a lease that ended or a key of another type, never reviving it; 1 for a live one', async () => {
    const k = keysOf(uniqueName('sem'));
    const wrong = keysOf(uniqueName('sem'));
    await run(lua.acquire, [k.sem, k.leases, k.fence, k.channel], ['a:1', 1, 2, 200, 60_000, 'publish']);
    await run(lua.acquire, [k.sem, k.leases, k.fence, k.channel], ['a:2', 1, 2, 30_000, 60_000, 'publish']);
    await s.f.admin.zadd(k.leases, 1, 'a:3'); // ended long ago, never pruned
    await s.f.admin.set(wrong.leases, 'x');
    const keys = [k.sem, k.leases, k.sem, k.leases, k.sem, k.leases, wrong.sem, wrong.leases];
    assert.equal(await run(lua.renew, keys, [1_000, 'a:1', 'a:2', 'a:3', 'a:1']), [1, 1, 0, 0]);
    assert.is(await s.f.admin.zscore(k.leases, 'a:3'), '1');
    const pttl = await s.f.admin.pttl(k.sem);
    assert.ok(pttl > 30_000, `the keys keep the longest lease (${pttl} ms)`);
  });

  it('acquire: keeps both keys alive until the latest lease end (plus the slack), whichever lease came last', async () => {
    const k = keysOf(uniqueName('sem'));
    await run(lua.acquire, [k.sem, k.leases, k.fence, k.channel], ['a:1', 1, 3, 60_000, 60_000, 'publish']);
    await run(lua.acquire, [k.sem, k.leases, k.fence, k.channel], ['a:2', 1, 3, 300, 60_000, 'publish']);
    for (const key of [k.sem, k.leases]) {
      const pttl = await s.f.admin.pttl(key);
      assert.ok(pttl > 60_000 && pttl <= 65_000, `${key} lives ${pttl} ms: the 60 s lease and the 5 s slack`);
    }
  });

  it('available: {1, n} counting a lease past its end as free, {-1, limit} under another limit', async () => {
    const k = keysOf(uniqueName('sem'));
    await run(lua.acquire, [k.sem, k.leases, k.fence, k.channel], ['a:1', 2, 3, 30_000, 60_000, 'publish']);
    await run(lua.acquire, [k.sem, k.leases, k.fence, k.channel], ['a:2', 1, 3, 100, 60_000, 'publish']);
    // Counts come as digits (the header).
    assert.equal(await run(lua.available, [k.sem, k.leases], [3]), [1, '0']);
    await sleep(150);
    assert.equal(await run(lua.available, [k.sem, k.leases], [3]), [1, '1']);
    assert.equal(await run(lua.available, [k.sem, k.leases], [4]), [-1, '3']);
  });
});
