// Jobs run once per window (client.job): run() never waits; a run ends at atMostMs, on Redis too;
// the lock stays taken until atLeastMs after the run's start by Redis's clock (its fencing token is
// that clock), and says "window" meanwhile; bad options are refused before any I/O; a Redlock client
// and the Redisson layout refuse jobs.
import * as assert from 'uvu/assert';
import { LockLostError } from '../../../src/index.ts';
import { lockKeys } from '../../../src/lock/keys.ts';
import { describe, uniqueName } from '../../helpers/describe.ts';
import { setup } from '../../helpers/fixture.ts';
import { assertRelockLayoutOnly, setupMasters } from '../redlock/masters.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const keyOf = (name: string) => lockKeys('relock', name).lock;

describe('job: once per window', (it) => {
  const s = setup(it);

  it('runs fn with a lease and resolves its value; without atLeastMs the lock is free at once', async () => {
    const job = s.client.job(uniqueName('job'), { atMostMs: 10_000 });
    const result = await job.run(async (lease) => {
      assert.is(lease.name, job.name);
      assert.ok(lease.fencingToken > 0);
      assert.is(await s.f.admin.exists(keyOf(job.name)), 1, 'held while fn runs');
      return 42;
    });
    assert.equal(result, { ran: true, value: 42 });
    assert.is(await s.f.admin.exists(keyOf(job.name)), 0);
    assert.equal(await job.run(() => 'again'), { ran: true, value: 'again' });
  });

  it('keeps the lock taken until atLeastMs after the start by Redis\'s clock, as a window, then runs again', async () => {
    const name = uniqueName('job');
    const [job, other] = [s.client.job(name, { atLeastMs: 3_000, atMostMs: 10_000 }), s.other.job(name, { atLeastMs: 3_000, atMostMs: 10_000 })];
    assert.equal(await job.run(() => sleep(300)), { ran: true, value: undefined });
    const pttl = await s.f.admin.pttl(keyOf(name));
    // The run lasted at least 300 ms on Redis too: what is left of the window is at most 2,700 ms.
    assert.ok(pttl > 0 && pttl <= 2_700, `window left ${pttl} ms`);
    assert.equal(await s.f.admin.hgetall(keyOf(name)), { window: '1' }, 'no owner holds it: only the window');
    let ran = false;
    assert.equal(await other.run(() => (ran = true)), { ran: false, reason: 'window' });
    assert.equal(await job.run(() => (ran = true)), { ran: false, reason: 'window' });
    assert.not.ok(ran);
    await s.f.admin.pexpire(keyOf(name), 1); // the window's end, sooner
    await sleep(20);
    assert.equal(await other.run(() => 'next window'), { ran: true, value: 'next window' });
  });

  it('says "held" without waiting while a run is under way, here or in another client, and inside its own run', async () => {
    const name = uniqueName('job');
    const job = s.client.job(name, { atLeastMs: 1_000, atMostMs: 10_000 });
    let release!: () => void;
    const running = job.run(async (lease) => {
      assert.equal(await job.run(() => 'nested'), { ran: false, reason: 'held' }, 'a run inside its own run');
      assert.is(await s.f.admin.hget(keyOf(name), `${lease.name}`), null);
      await new Promise<void>((resolve) => (release = resolve));
      return 'first';
    });
    while (!release) await sleep(5);
    assert.equal(await s.other.job(name, { atMostMs: 10_000 }).run(() => 'second'), { ran: false, reason: 'held' });
    assert.equal(await s.client.job(name, { atMostMs: 10_000 }).run(() => 'third'), { ran: false, reason: 'held' });
    release();
    assert.equal(await running, { ran: true, value: 'first' });
    assert.equal(await s.other.job(name, { atMostMs: 10_000 }).run(() => 'fourth'), { ran: false, reason: 'window' });
  });

  it('rejects with what fn threw, and keeps the window all the same', async () => {
    const job = s.client.job(uniqueName('job'), { atLeastMs: 5_000, atMostMs: 10_000 });
    const failure = new Error('report failed');
    try {
      await job.run(() => {
        throw failure;
      });
      assert.unreachable('run resolved');
    } catch (error) {
      assert.is(error, failure);
    }
    assert.equal(await s.other.job(job.name, { atMostMs: 10_000 }).run(() => 'again'), { ran: false, reason: 'window' });
  });

  it('cuts a run at atMostMs: its signal aborts with ERR_LOCK_MAX_HOLD, the lock ends on Redis then, and run rejects', async () => {
    const name = uniqueName('job');
    const job = s.client.job(name, { atLeastMs: 100, atMostMs: 400 });
    let reason: unknown;
    let freedWhileRunning = false;
    const running = job.run(async (lease) => {
      // A hung job: it notices the signal, then goes on for another 300 ms.
      await new Promise((resolve) => lease.signal.addEventListener('abort', resolve, { once: true }));
      reason = lease.signal.reason;
      for (let i = 0; i < 30 && !freedWhileRunning; i++) {
        freedWhileRunning = (await s.f.admin.exists(keyOf(name))) === 0;
        await sleep(10);
      }
      return 'late';
    });
    try {
      await running;
      assert.unreachable('a cut run resolved');
    } catch (error) {
      assert.instance(error, LockLostError);
      assert.is((error as LockLostError).code, 'ERR_LOCK_MAX_HOLD');
    }
    assert.is((reason as LockLostError).code, 'ERR_LOCK_MAX_HOLD');
    assert.ok(freedWhileRunning, 'the lock ended on Redis at atMostMs, while fn still ran');
    assert.equal(await s.other.job(name, { atMostMs: 1_000 }).run(() => 'next'), { ran: true, value: 'next' });
  });

  it('wakes a waiter of the same lock when a run ends, and lets it in only after the window', async () => {
    const name = uniqueName('job');
    const job = s.client.job(name, { atLeastMs: 600, atMostMs: 10_000 });
    let waited!: Promise<number>;
    let runToken = 0;
    await job.run(async (lease) => {
      runToken = lease.fencingToken;
      waited = s.other.lock(name).acquire({ waitMs: 10_000 }).then(async (lease) => {
        const token = lease.fencingToken;
        await lease.release();
        return token;
      });
      await sleep(50);
    });
    // Fencing tokens of first acquisitions are Redis's clock in microseconds.
    const gapMs = ((await waited) - runToken) / 1000;
    assert.ok(gapMs >= 599, `the waiter got in ${gapMs} ms after the run's start`);
  });

  it('refuses bad options and a bad fn before any I/O', async () => {
    const calls = await s.f.scriptCalls();
    assert.throws(() => s.client.job('j', undefined as never), (error: Error) => error instanceof TypeError);
    assert.throws(() => s.client.job('j', {} as never), (error: Error) => error instanceof TypeError && /atMostMs/.test(error.message));
    assert.throws(() => s.client.job('j', { atMostMs: 0 }), (error: Error) => error instanceof RangeError && /atMostMs/.test(error.message));
    assert.throws(() => s.client.job('j', { atMostMs: '5' as never }), (error: Error) => error instanceof TypeError && /atMostMs/.test(error.message));
    assert.throws(() => s.client.job('j', { atMostMs: 1_000, atLeastMs: 2_000 }), (error: Error) => error instanceof RangeError && /atLeastMs/.test(error.message));
    assert.throws(() => s.client.job('j', { atMostMs: 1_000, atLeastMs: -1 }), (error: Error) => error instanceof RangeError && /atLeastMs/.test(error.message));
    assert.throws(() => s.client.job('j', { atMostMs: 1_000, every: 5 } as never), (error: Error) => error instanceof TypeError && /every/.test(error.message));
    assert.throws(() => s.client.job('', { atMostMs: 1_000 }), (error: Error) => error instanceof RangeError || error instanceof TypeError);
    try {
      await s.client.job('j', { atMostMs: 1_000 }).run('fn' as never);
      assert.unreachable('run took a string');
    } catch (error) {
      assert.instance(error, TypeError);
      assert.match((error as Error).message, /fn/);
    }
    assert.is(await s.f.scriptCalls(), calls, 'no script ran');
  });
});

describe('job: refused where a window cannot be kept', (it) => {
  const masters = setupMasters(it, 3);

  it('on a Redlock client and in the Redisson layout, with ERR_LOCK_UNSUPPORTED, before any I/O', async () => {
    await assertRelockLayoutOnly(masters, 'job', (client) => client.job('nightly', { atMostMs: 1_000 }));
  });
});
