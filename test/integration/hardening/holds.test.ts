// Issue 7, sections 1 and 4: a hold is never left renewed with no owner, and the `await using` trap
// is impossible to miss. Against a private redis-server; faults are real (CLIENT PAUSE WRITE with an
// ioredis commandTimeout, maxmemory with noeviction, ACL changes), and microtask offsets are injected
// by wrapping the evalsha method of a real ioredis client passed in.
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { LockClient, LockNotHeldError, type LockError } from '../../../src/index.ts';
import { createRelockUser } from '../../helpers/acl.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { setup, sleep } from '../../helpers/fixture.ts';

const noop = () => undefined;
const lockKey = (name: string) => `relock:{${name}}`;

/** Runs `fn` after `n` microtask hops (0: at once, in the caller's microtask). */
function afterMicrotasks(n: number, fn: () => void): void {
  if (n === 0) return fn();
  let chain = Promise.resolve();
  for (let i = 1; i < n; i++) chain = chain.then();
  void chain.then(fn);
}

async function microtasks(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await Promise.resolve();
}

/**
 * Wraps a real client's evalsha: a hook set for a lock key runs when a script on that key gets its
 * reply, before relock sees it (its promise, if any, delays the reply).
 */
function instrument(redis: Redis): Map<string, () => void | Promise<void>> {
  const hooks = new Map<string, () => void | Promise<void>>();
  const original = redis.evalsha.bind(redis) as (...args: unknown[]) => Promise<unknown>;
  (redis as unknown as { evalsha: (...args: unknown[]) => Promise<unknown> }).evalsha = (...args) =>
    original(...args).then((reply) => {
      const hook = hooks.get(String(args[2]));
      const delayed = hook?.();
      return delayed ? delayed.then(() => reply) : reply;
    });
  return hooks;
}

/** A connection with ioredis options of its own, closed by the caller. */
function connection(s: { f: { server: { host: string; port: number } } }, options: Record<string, unknown>): Redis {
  const redis = new Redis({ host: s.f.server.host, port: s.f.server.port, ...options });
  redis.on('error', noop);
  return redis;
}

describe('Lease#release of the outermost lease (issue 7, 1.1)', (it) => {
  const s = setup(it, {}, {}, { private: true });

  it('frees the lock though a nested lease of the hold was never released', async () => {
    const c = s.f.client({ leaseMs: 600 });
    const lock = c.lock(uniqueName());
    const outer = await lock.acquire();
    const inner = await outer.run(() => lock.acquire());
    assert.is(inner.holdCount, 2);
    await outer.release();
    assert.is(await s.f.admin.exists(lockKey(lock.name)), 0, 'the owner field went with its count of 2');
    await sleep(300); // longer than a renewal period (200 ms): nothing renews or recreates it
    assert.is(await s.f.admin.exists(lockKey(lock.name)), 0);
    assert.instance(await rejects(inner.release()), LockNotHeldError);
    const next = await s.other.lock(lock.name).tryAcquire();
    assert.ok(next, 'another client takes it at once');
    await next.release();
  });

  it('frees the lock though a nested release was refused under noeviction with memory full (HINCRBY refused, PEXPIRE passes)', async () => {
    const c = s.f.client({ leaseMs: 600 });
    const lock = c.lock(uniqueName());
    const key = lockKey(lock.name);
    const outer = await lock.acquire();
    const inner = await outer.run(() => lock.acquire());
    await s.f.admin.config('SET', 'maxmemory', '1'); // used memory > maxmemory: denyoom commands refused
    try {
      const refused = await rejects(inner.release());
      assert.match(String(refused.message), /OOM/);
      assert.equal(Object.values(await s.f.admin.hgetall(key)), ['2'], 'the refused nested release changed nothing');
      await sleep(300); // renewals (PEXPIRE) still pass under OOM: the hold is alive
      assert.ok((await s.f.admin.pttl(key)) > 300);
      await outer.release();
    } finally {
      await s.f.admin.config('SET', 'maxmemory', '0');
    }
    assert.is(await s.f.admin.exists(key), 0, 'the owner field went whatever its count');
    await sleep(300);
    assert.is(await s.f.admin.exists(key), 0, 'and nothing renews it');
  });

  it('frees the lock though a nested release timed out (ioredis commandTimeout) during CLIENT PAUSE WRITE', async () => {
    const redis = connection(s, { commandTimeout: 150 });
    const c = new LockClient({ redis, leaseMs: 1_500 });
    try {
      const lock = c.lock(uniqueName());
      const key = lockKey(lock.name);
      const outer = await lock.acquire();
      const inner = await outer.run(() => lock.acquire());
      await s.f.admin.call('CLIENT', 'PAUSE', '10000', 'WRITE');
      let failed: Error;
      try {
        failed = await within(rejects(inner.release()), 2_000, 'the nested release during the pause');
      } finally {
        await s.f.admin.call('CLIENT', 'UNPAUSE');
      }
      assert.match(String(failed.message), /timed out/i);
      await redis.ping(); // the timed-out release ran on Redis meanwhile (it was queued before this)
      await outer.release();
      assert.is(await s.f.admin.exists(key), 0, 'the outermost release removed the field');
      await sleep(600); // longer than a renewal period (500 ms)
      assert.is(await s.f.admin.exists(key), 0);
      const next = await s.other.lock(lock.name).tryAcquire();
      assert.ok(next, 'the lock is free for others');
      await next.release();
    } finally {
      await c.close();
      redis.disconnect();
    }
  });

  it('frees the lock when runExclusive ends though a nested release inside it was refused', async () => {
    const c = s.f.client({ leaseMs: 600 });
    const lock = c.lock(uniqueName());
    let result: string;
    try {
      result = await lock.runExclusive(async () => {
        const inner = await lock.acquire();
        await s.f.admin.config('SET', 'maxmemory', '1');
        assert.match(String((await rejects(inner.release())).message), /OOM/);
        return 'done';
      });
    } finally {
      await s.f.admin.config('SET', 'maxmemory', '0');
    }
    assert.is(result, 'done');
    assert.is(await s.f.admin.exists(lockKey(lock.name)), 0);
    await sleep(300);
    assert.is(await s.f.admin.exists(lockKey(lock.name)), 0);
  });

  it('stops renewing a hold whose outermost release failed: its key runs out its lease', async () => {
    const user = await createRelockUser(s.f.admin, `hardening-${Math.random().toString(36).slice(2)}`);
    const c = s.f.client({ redis: { host: s.f.server.host, port: s.f.server.port, ...user.options }, leaseMs: 600 });
    c.on('error', noop);
    const lock = c.lock(uniqueName());
    const key = lockKey(lock.name);
    const outer = await lock.acquire();
    await outer.run(() => lock.acquire()); // a nested lease nobody releases
    await s.f.admin.call('ACL', 'SETUSER', user.username, 'resetchannels'); // the release's PUBLISH is refused now
    const failed = await rejects(outer.release());
    assert.match(String(failed.message), /publish|NOPERM|channel/i);
    // No lease of the hold is open any more: renewal (every 200 ms) must not keep it alive.
    const first = await s.f.admin.pttl(key);
    await sleep(300);
    const second = await s.f.admin.pttl(key);
    assert.ok(second === -2 || second < first - 200, `PTTL went from ${first} to ${second} ms: it is not renewed`);
    await eventually(async () => (await s.f.admin.exists(key)) === 0, 'the key expired with its lease', 1_000);
  });
});

describe('Lock#acquire aborted as its reply arrives (issue 7, 1.2)', (it) => {
  const s = setup(it, {}, {}, { private: true });

  it('resolves with a lease or leaves no hold, when the signal aborts 0..40 microtasks after the script reply', async () => {
    const redis = s.f.server.connect();
    const hooks = instrument(redis);
    const c = new LockClient({ redis, leaseMs: 1_500 });
    try {
      await (await c.lock(uniqueName('warm-up')).acquire()).release(); // scripts loaded: one EVALSHA per attempt
      const names: string[] = [];
      let acquired = 0;
      let aborted = 0;
      for (let offset = 0; offset <= 40; offset++) {
        const lock = c.lock(uniqueName(`abort-${offset}`));
        names.push(lock.name);
        const controller = new AbortController();
        const reason = new Error(`aborted ${offset} microtasks after the reply`);
        hooks.set(lockKey(lock.name), () => afterMicrotasks(offset, () => controller.abort(reason)));
        let lease;
        try {
          lease = await within(lock.acquire({ signal: controller.signal }), 2_000, `acquire at offset ${offset}`);
        } catch (error) {
          assert.is(error, reason, `offset ${offset}: rejects with the signal's reason`);
        } finally {
          hooks.delete(lockKey(lock.name));
        }
        if (lease) {
          acquired++;
          assert.is(await s.f.admin.exists(lockKey(lock.name)), 1, `offset ${offset}: the lease handed out is held`);
          await lease.release();
        } else {
          aborted++;
          // Given back at once, not left to expire (1.5 s) nor renewed.
          await eventually(async () => (await s.f.admin.exists(lockKey(lock.name))) === 0, `offset ${offset}: the hold is given back`, 400);
        }
      }
      await sleep(600); // longer than a renewal period (500 ms)
      for (const name of names) assert.is(await s.f.admin.exists(lockKey(name)), 0, `${name}: no hold left`);
      assert.ok(aborted > 0, 'some aborts landed before the acquire settled');
      assert.ok(acquired + aborted === 41);
    } finally {
      await c.close();
    }
  });

  it('resolves with a lease or leaves no hold, when waitMs ends as the script reply arrives', async () => {
    const redis = s.f.server.connect();
    const hooks = instrument(redis);
    const c = new LockClient({ redis, leaseMs: 1_500 });
    try {
      await (await c.lock(uniqueName('warm-up')).acquire()).release();
      const waitMs = 60;
      for (const deltaMs of [-6, -3, -2, -1, 0, 1, 2, 3, 6]) {
        const lock = c.lock(uniqueName(`wait-${deltaMs}`));
        const startedAt = performance.now();
        // The reply is held back until about the moment waitMs ends.
        hooks.set(lockKey(lock.name), () => sleep(Math.max(0, startedAt + waitMs + deltaMs - performance.now())) as Promise<void>);
        const lease = await within(lock.acquire({ waitMs }), 2_000, `acquire with the reply at waitMs ${deltaMs >= 0 ? '+' : ''}${deltaMs} ms`).catch(
          (error: LockError) => {
            assert.is(error.code, 'ERR_LOCK_TIMEOUT');
            return undefined;
          },
        );
        hooks.delete(lockKey(lock.name));
        if (lease) await lease.release();
        else await eventually(async () => (await s.f.admin.exists(lockKey(lock.name))) === 0, `reply at ${deltaMs} ms: the hold is given back`, 400);
      }
    } finally {
      await c.close();
    }
  });
});

describe('Lock#acquire rejected by ioredis commandTimeout (issue 7, 1.3)', (it) => {
  const s = setup(it, {}, {}, { private: true });

  it('gives back a first acquisition whose script ran after the client-side timeout rejected it', async () => {
    const redis = connection(s, { commandTimeout: 150 });
    const c = new LockClient({ redis, leaseMs: 10_000 });
    try {
      const lock = c.lock(uniqueName());
      await (await lock.acquire()).release(); // connected, scripts loaded
      const tokenBefore = await s.f.admin.get(`${lockKey(lock.name)}:fence`);
      await s.f.admin.call('CLIENT', 'PAUSE', '10000', 'WRITE');
      let failure: LockError;
      try {
        failure = await within(rejects(lock.tryAcquire()), 2_000, 'tryAcquire during the pause');
      } finally {
        await s.f.admin.call('CLIENT', 'UNPAUSE');
      }
      await redis.ping(); // everything sent before it, the late acquire included, has run now
      assert.is.not(await s.f.admin.get(`${lockKey(lock.name)}:fence`), tokenBefore, 'the late acquire script did run and took the lock');
      assert.is(await s.f.admin.exists(lockKey(lock.name)), 0, 'its owner was given back: the lock is not blocked for a lease (10 s)');
      assert.is(failure.code, 'ERR_LOCK_UNREACHABLE');
      const next = await s.other.lock(lock.name).tryAcquire();
      assert.ok(next);
      await next.release();
    } finally {
      await c.close();
      redis.disconnect();
    }
  });

  it('gives back a nested acquisition whose script ran after the client-side timeout: the count is what it was', async () => {
    const redis = connection(s, { commandTimeout: 150 });
    const c = new LockClient({ redis, leaseMs: 10_000 });
    try {
      const lock = c.lock(uniqueName());
      const key = lockKey(lock.name);
      const outer = await lock.acquire();
      const [field] = Object.keys(await s.f.admin.hgetall(key));
      await s.f.admin.call('CLIENT', 'PAUSE', '10000', 'WRITE');
      try {
        await within(rejects(outer.run(() => lock.acquire())), 2_000, 'nested acquire during the pause');
      } finally {
        await s.f.admin.call('CLIENT', 'UNPAUSE');
      }
      await redis.ping(); // the late nested acquire (and whatever gave it back) ran
      assert.is(await s.f.admin.hget(key, field!), '1', 'the hold count is back to 1');
      await outer.release();
      assert.is(await s.f.admin.exists(key), 0);
    } finally {
      await c.close();
      redis.disconnect();
    }
  });
});

describe("Lock#acquire beside the context's last release (issue 7, 1.4)", (it) => {
  const s = setup(it);

  it('takes the lock afresh, never LockNotHeldError, when acquire() starts 0..10 microtasks after release()', async () => {
    for (let offset = 0; offset <= 10; offset++) {
      const lock = s.client.lock(uniqueName());
      const outer = await lock.acquire();
      const releasing = outer.release();
      const again = await within(
        outer.run(async () => {
          await microtasks(offset);
          return lock.acquire({ waitMs: 2_000 });
        }),
        3_000,
        `acquire at offset ${offset}`,
      );
      await releasing;
      assert.is(again.holdCount, 1, `offset ${offset}: a fresh hold`);
      assert.ok(again.fencingToken > outer.fencingToken, `offset ${offset}: a new fencing token`);
      assert.is(Object.keys(await s.f.admin.hgetall(lockKey(lock.name))).length, 1, `offset ${offset}: held on Redis`);
      await again.release();
      assert.not.ok(await lock.isLocked());
    }
  });
});

describe('The `await using` trap (issue 7, 4)', (it) => {
  const s = setup(it);

  it("warns once, with a 'warning' event and process.emitWarning (ERR_LOCK_SELF_WAIT), when an acquire waits on a lock its own client holds", async () => {
    // Node also prints this warning on stderr: say so in the output, where it will appear.
    process.stdout.write('\n  expected: the RelockWarning [ERR_LOCK_SELF_WAIT] below is what this test provokes\n');
    const c = s.f.client({ leaseMs: 300 });
    const events: LockError[] = [];
    c.on('warning', (warning) => void (warning.code === 'ERR_LOCK_SELF_WAIT' && events.push(warning)));
    const emitted: Error[] = [];
    const onWarning = (warning: Error) => void ((warning as { code?: string }).code === 'ERR_LOCK_SELF_WAIT' && emitted.push(warning));
    process.on('warning', onWarning);
    try {
      const first = c.lock(uniqueName());
      const lease = await first.acquire(); // as `await using lease = await lock.acquire()` does
      const helper = first.acquire({ waitMs: 2_000 }); // a helper that locks the same name, outside lease.run
      helper.catch(noop); // awaited below; not an unhandled rejection if the test fails first
      await eventually(() => events.length > 0, "a 'warning' event while the helper waits", 1_500);
      assert.is(events[0]!.code, 'ERR_LOCK_SELF_WAIT');
      assert.is(events[0]!.lockName, first.name);
      assert.match(events[0]!.message, /lease\.run/);
      // A second trap on another lock of the same client: no second warning.
      const second = c.lock(uniqueName());
      const other = await second.acquire();
      const code = ((await rejects(second.acquire({ waitMs: 800 }))) as LockError).code;
      assert.is(code, 'ERR_LOCK_TIMEOUT');
      await other.release();
      await lease.release();
      await (await within(helper, 2_000, 'the helper after the release')).release();
      await sleep(10); // process warnings are emitted on the next tick
      assert.is(events.length, 1, "one 'warning' event");
      assert.is(emitted.length, 1, 'one process warning');
      assert.is(emitted[0]!.name, 'RelockWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('re-enters at once, without a warning, when the helper runs inside lease.run', async () => {
    const c = s.f.client({ leaseMs: 300 });
    const warnings: LockError[] = [];
    c.on('warning', (warning) => void warnings.push(warning));
    const lock = c.lock(uniqueName());
    const lease = await lock.acquire();
    const nested = await within(lease.run(() => lock.acquire()), 500, 'the nested acquire');
    assert.is(nested.holdCount, 2);
    assert.is(nested.fencingToken, lease.fencingToken);
    await sleep(400);
    assert.equal(
      warnings.map((warning) => warning.code),
      [],
    );
    await nested.release();
    await lease.release();
    assert.not.ok(await lock.isLocked());
  });
});
