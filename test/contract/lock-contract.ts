// The Lock contract: every behaviour the `Lock` and `Lease` interfaces promise (../shared/CONTRACT.md),
// as one suite that any lock kind runs by handing in a factory. Later kinds (fairLock, multiLock,
// readWriteLock().writeLock(), Redlock) reuse it; what a kind does not support is switched off in
// the options, never by editing a test.
import * as assert from 'uvu/assert';
import { LockClient, LockLostError, LockNotHeldError, LockTimeoutError, type Lease, type Lock, type LockClientOptions } from '../../src/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../helpers/describe.ts';
import { disconnect, each, type Deployment } from '../helpers/deployment.ts';
import { setup, sleep } from '../helpers/fixture.ts';
import { assertClosedBeforeCall } from '../helpers/closed.ts';

export interface LockContractOptions {
  /**
   * Re-entry in the holder's async context (runExclusive, lease.run). A kind without it is checked
   * not to re-enter: a nested tryAcquire in the holder's context gets null.
   * @default true
   */
  readonly reentrant?: boolean;
  /** The `name` the lock reports for the name given to the factory (a multi-lock joins names). @default the name */
  readonly expectedName?: (name: string) => string;
  /** Options of every LockClient the suite makes; `leaseMs` is the suite's own. `redis` defaults to the suite's server. */
  readonly clientOptions?: Omit<LockClientOptions, 'leaseMs'>;
  /** Script calls a waiter may send while it sleeps behind a lock held for 30 s (pub/sub, no polling: 0). @default 0 */
  readonly idleWaitCalls?: number;
  /**
   * For a kind whose holders share it (the read side of a read-write lock): the lock of the same name
   * that keeps it out (the write side). The tests where one holder keeps a waiter out take that
   * holder from here, and the four tests of two holders of this kind excluding each other (two
   * contexts, two acquires, one holder at a time, one waiter woken per release) are skipped, since
   * readers share by design. @default none: the kind keeps itself out
   */
  readonly blocker?: (client: LockClient, name: string) => Lock;
  /** What the suite runs on (helpers/deployment.ts): one server, a Cluster, the masters of a Redlock client. @default a server of its own */
  readonly servers?: () => Promise<Deployment>;
  /** Every client of the suite shares one set of ioredis connections passed in (helpers/fixture.ts). @default false */
  readonly shareConnections?: boolean;
}

/**
 * Runs the Lock contract against one kind of lock.
 * @param label how the suite names the kind, e.g. `'client.lock()'`
 * @param factory the lock of that kind on `client` for `name`: called with several clients and one
 *   name, it must give the same lock on each (a multi-lock derives its members from the name)
 */
export function lockContract(label: string, factory: (client: LockClient, name: string) => Lock, options: LockContractOptions = {}): void {
  const reentrant = options.reentrant ?? true;
  const expectedName = options.expectedName ?? ((name: string) => name);
  const clientOptions = options.clientOptions ?? {};
  const idleWaitCalls = options.idleWaitCalls ?? 0;
  const holder = options.blocker ?? factory;
  const exclusive = options.blocker === undefined;

  describe(`Lock contract: ${label}`, (it) => {
    // Both with the default 30 s watchdog lease: a waiter behind them can only be woken early by a
    // release. `fast` renews every 100 ms, so losses are noticed quickly.
    const s = setup(it, clientOptions, clientOptions, options.servers ?? {}, { shareConnections: options.shareConnections ?? false });
    let fast: LockClient;
    it.before(() => {
      fast = s.f.client({ ...clientOptions, leaseMs: 300 });
    });

    /** The same fresh lock on each client given. */
    const locks = (...clients: LockClient[]): Lock[] => {
      const name = uniqueName('contract');
      return clients.map((client) => factory(client, name));
    };
    const lockOn = (client: LockClient): Lock => factory(client, uniqueName('contract'));
    /** One fresh name: the kind's lock on `mine`, and the lock that keeps it out on `theirs` (the kind itself unless `blocker`). */
    const rivals = (mine: LockClient, theirs: LockClient): Lock[] => {
      const name = uniqueName('contract');
      return [factory(mine, name), holder(theirs, name)];
    };
    /** Script calls over every node. */
    const scriptCalls = () => s.f.scriptCalls();
    /** Resolves with the signal's reason once it aborts. */
    const aborted = (signal: AbortSignal, ms: number, what: string) =>
      within(
        signal.aborted ? Promise.resolve(signal.reason) : new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true })),
        ms,
        what,
      );

    // --- Lock: acquire, isLocked, remainingTtlMs, release

    it('has the name it was made with', () => {
      const name = uniqueName('contract');
      assert.is(factory(s.client, name).name, expectedName(name));
    });

    it('acquires a free lock: a lease with its name, a fencing token, holdCount 1 and a live signal', async () => {
      const [lock] = locks(s.client);
      assert.is(await lock!.isLocked(), false);
      assert.is(await lock!.remainingTtlMs(), null);
      const lease = await lock!.acquire();
      assert.is(lease.name, lock!.name);
      assert.ok(Number.isSafeInteger(lease.fencingToken) && lease.fencingToken > 0, `token ${lease.fencingToken}`);
      assert.is(lease.holdCount, 1);
      assert.is(lease.signal.aborted, false);
      assert.ok(await lock!.isLocked());
      const ttl = await lock!.remainingTtlMs();
      assert.ok(ttl !== null && ttl > 0 && ttl <= 30_000, `remaining ${ttl} ms of a 30 s watchdog lease`);
      await lease.release();
      assert.is(await lock!.isLocked(), false);
      assert.is(await lock!.remainingTtlMs(), null);
      assert.is(lease.signal.aborted, false, 'a release is not a loss');
    });

    if (exclusive) it('tryAcquire gives a lease when free, null when another client or another context holds it', async () => {
      const [mine, theirs] = locks(s.client, s.other);
      const lease = await mine!.tryAcquire();
      assert.ok(lease);
      assert.is(lease!.holdCount, 1);
      assert.is(await theirs!.tryAcquire(), null, 'another client');
      assert.is(await mine!.tryAcquire(), null, 'another context of the same client');
      await lease!.release();
      const fixed = await theirs!.tryAcquire({ leaseMs: 5_000 });
      assert.ok(fixed);
      const ttl = (await theirs!.remainingTtlMs())!;
      assert.ok(ttl > 4_000 && ttl <= 5_000, `remaining ${ttl} ms of a 5 s fixed lease`);
      await fixed!.release();
    });

    if (exclusive) it('takes a fresh context outside any: two acquire() calls of one client exclude each other', async () => {
      const [lock] = locks(s.client);
      const first = await lock!.acquire();
      const second = lock!.acquire();
      await eventually(() => s.client.waiting === 1, 'the second acquire waits');
      await first.release();
      const lease = await within(second, 2_000, 'the second acquire, after the first release');
      assert.is(lease.holdCount, 1);
      assert.ok(lease.fencingToken > first.fencingToken);
      await lease.release();
    });

    if (exclusive) it('lets only one holder in at a time under contention from several clients', async () => {
      const [a, b, c] = locks(s.client, s.other, fast);
      let inside = 0;
      let overlaps = 0;
      const tokens: number[] = [];
      await Promise.all(
        [a, b, c, a, b, c].map(async (lock) => {
          for (let i = 0; i < 4; i++) {
            await lock!.runExclusive(async (lease) => {
              if (++inside > 1) overlaps++;
              tokens.push(lease.fencingToken);
              await sleep(2);
              inside--;
            });
          }
        }),
      );
      assert.is(overlaps, 0);
      assert.is(tokens.length, 24);
      for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `tokens in the order of holders: ${tokens}`);
    });

    // --- Waiting

    it('tries once with waitMs 0: LockTimeoutError when held, the lease when free', async () => {
      const [mine, theirs] = rivals(s.client, s.other);
      const held = await theirs!.acquire();
      const started = performance.now();
      const error = await rejects(mine!.acquire({ waitMs: 0 }));
      assert.instance(error, LockTimeoutError);
      assert.ok(performance.now() - started < 1_000, 'no wait');
      assert.is(s.client.waiting, 0, 'never queued');
      await held.release();
      const lease = await mine!.acquire({ waitMs: 0 });
      await lease.release();
    });

    it('rejects with LockTimeoutError once waitMs has passed, and leaves the queue', async () => {
      const [mine, theirs] = rivals(s.client, s.other);
      const held = await theirs!.acquire();
      const started = performance.now();
      const error = await rejects(mine!.acquire({ waitMs: 300 }));
      const waited = performance.now() - started;
      assert.instance(error, LockTimeoutError);
      assert.is(error.code, 'ERR_LOCK_TIMEOUT');
      assert.is(error.name, 'LockTimeoutError');
      assert.is(error.lockName, mine!.name);
      assert.ok(waited >= 290 && waited < 2_000, `gave up after ${waited} ms`);
      assert.is(s.client.waiting, 0);
      await held.release();
      assert.not.ok(await mine!.isLocked(), 'the timed-out wait took nothing');
    });

    it('cancels a wait with signal.reason, leaving the queue and taking nothing', async () => {
      const [mine, theirs] = rivals(s.client, s.other);
      const held = await theirs!.acquire();
      const controller = new AbortController();
      const waiting = rejects(mine!.acquire({ signal: controller.signal }));
      await eventually(() => s.client.waiting === 1, 'queued');
      const reason = new Error('not needed any more');
      controller.abort(reason);
      assert.is(await within(waiting, 1_000, 'the aborted wait'), reason);
      assert.is(s.client.waiting, 0);
      await held.release();
      await sleep(50);
      assert.not.ok(await mine!.isLocked(), 'the aborted wait took nothing');
    });

    it('cancels a runExclusive wait with signal.reason without running fn', async () => {
      const [mine, theirs] = rivals(s.client, s.other);
      const held = await theirs!.acquire();
      let ran = false;
      const reason = new Error('timeout of the caller');
      const error = await rejects(mine!.runExclusive(() => void (ran = true), { signal: AbortSignal.timeout(100) }));
      assert.is(error.name, 'TimeoutError', 'AbortSignal.timeout() reason');
      const controller = new AbortController();
      controller.abort(reason);
      assert.is(await rejects(mine!.runExclusive(() => void (ran = true), { signal: controller.signal })), reason);
      assert.instance(await rejects(mine!.runExclusive(() => void (ran = true), { waitMs: 0 })), LockTimeoutError);
      assert.not.ok(ran);
      await held.release();
    });

    it('wakes a waiter on release, long before the holder lease ends, and the waiter sends nothing while it sleeps', async () => {
      const [mine, theirs] = rivals(s.client, s.other);
      const held = await theirs!.acquire(); // a 30 s watchdog lease: no expiry, no renewal for 10 s
      const waiting = mine!.acquire();
      await eventually(() => s.client.waiting === 1, 'queued');
      await sleep(50); // the head's try after subscribing has landed
      const before = await scriptCalls();
      await sleep(500);
      const calls = (await scriptCalls()) - before;
      assert.ok(calls <= idleWaitCalls, `${calls} script calls in 500 ms of sleep: polling`);
      const releasedAt = performance.now();
      await held.release();
      const lease = await within(waiting, 2_000, 'the waiter after the release');
      const after = performance.now() - releasedAt;
      assert.ok(after < 1_000, `woken ${after} ms after the release`);
      await lease.release();
    });

    if (exclusive) it('wakes one waiter per release, not the herd', async () => {
      const [theirs, ...mine] = locks(s.other, s.client, s.client, s.client);
      const held = await theirs!.acquire();
      const acquired: Lease[] = [];
      const waits = mine.map((lock) => lock.acquire().then((lease) => (acquired.push(lease), lease)));
      await eventually(() => s.client.waiting === 3, 'three queued');
      await held.release();
      await eventually(() => acquired.length === 1, 'one waiter has the lock');
      await sleep(100);
      assert.is(acquired.length, 1);
      assert.is(s.client.waiting, 2);
      for (let i = 0; i < 3; i++) {
        await eventually(() => acquired.length === i + 1, `waiter ${i + 1}`);
        await acquired[i]!.release();
      }
      await Promise.all(waits);
    });

    it('retries at once when the subscriber connection comes back (what was published meanwhile is lost)', async () => {
      const [mine, theirs] = rivals(s.client, s.other);
      const held = await theirs!.acquire(); // 30 s lease: only a retry makes this quick
      const waiting = mine!.acquire();
      await eventually(() => s.client.waiting === 1, 'queued');
      for (const admin of s.f.admins) await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await held.release(); // published while the subscriber is down
      await (await within(waiting, 5_000, 'the waiter after the subscriber came back')).release();
    });

    it('gives the lock to a waiter once the lease of a holder that crashed has run out', async () => {
      const name = uniqueName('contract');
      const crashed = s.f.client(clientOptions);
      const gone = await holder(crashed, name).acquire({ leaseMs: 500 });
      await crashed.close(); // never released: nothing of that holder is left to release or renew
      const lock = factory(s.client, name);
      assert.ok(await holder(s.client, name).isLocked());
      const started = performance.now();
      const lease = await within(lock.acquire(), 3_000, 'the acquire after the crashed holder lease');
      const waited = performance.now() - started;
      assert.ok(waited >= 300, `acquired after ${waited} ms, while the crashed holder's lease still ran`);
      assert.ok(lease.fencingToken > gone.fencingToken);
      await lease.release();
    });

    // --- Bad arguments, close()

    it('rejects bad arguments with a TypeError or RangeError naming them, before any I/O', async () => {
      // Connections that were never opened (a Redis, a Cluster, one per master): any command would open them.
      const redis = s.f.deployment.connect({ lazyConnect: true });
      const client = new LockClient({ ...clientOptions, redis });
      const lock = lockOn(client);
      type Case = [label: string, call: () => unknown, error: typeof TypeError | typeof RangeError, mentions: string];
      const cases: Case[] = [
        ['acquire options not an object', () => lock.acquire('fast' as never), TypeError, 'acquire()'],
        ['acquire unknown option', () => lock.acquire({ timeout: 5 } as never), TypeError, '`timeout`'],
        ['waitMs negative', () => lock.acquire({ waitMs: -1 }), RangeError, '`waitMs`'],
        ['waitMs NaN', () => lock.acquire({ waitMs: Number.NaN }), RangeError, '`NaN`'],
        ['waitMs a string', () => lock.acquire({ waitMs: '100' as never }), TypeError, '`waitMs`'],
        ['leaseMs zero', () => lock.acquire({ leaseMs: 0 }), RangeError, '`leaseMs`'],
        ['leaseMs fractional', () => lock.acquire({ leaseMs: 100.5 }), RangeError, '`100.5`'],
        ['leaseMs Infinity', () => lock.acquire({ leaseMs: Number.POSITIVE_INFINITY }), RangeError, '`leaseMs`'],
        ['signal not an AbortSignal', () => lock.acquire({ signal: {} as never }), TypeError, '`signal`'],
        ['tryAcquire waitMs', () => lock.tryAcquire({ waitMs: 0 } as never), TypeError, '`waitMs`'],
        ['tryAcquire leaseMs negative', () => lock.tryAcquire({ leaseMs: -5 }), RangeError, '`-5`'],
        ['maxHoldMs zero', () => lock.acquire({ maxHoldMs: 0 }), RangeError, '`maxHoldMs`'],
        ['tryAcquire maxHoldMs a string', () => lock.tryAcquire({ maxHoldMs: '1' as never }), TypeError, '`maxHoldMs`'],
        ['runExclusive without fn', () => lock.runExclusive(undefined as never), TypeError, '`fn`'],
        ['runExclusive with bad options', () => lock.runExclusive(() => 1, { waitMs: -1 }), RangeError, '`waitMs`'],
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
      const controller = new AbortController();
      const reason = new Error('aborted before the call');
      controller.abort(reason);
      assert.is(await rejects(lock.acquire({ signal: controller.signal })), reason, 'an aborted signal rejects with its reason');
      for (const connection of each(redis)) assert.is(connection.status, 'wait', 'no connection was attempted');
      await client.close();
      disconnect(redis);
    });

    it('close() rejects every pending wait with an AbortError and ends the leases of that client', async () => {
      const name = uniqueName('contract');
      const held = await holder(s.other, name).acquire();
      const client = s.f.client(clientOptions);
      const mine = await lockOn(client).acquire();
      const waits = [
        rejects(factory(client, name).acquire()),
        rejects(factory(client, name).acquire({ waitMs: 60_000 })),
        rejects(factory(client, name).runExclusive(() => undefined, { signal: new AbortController().signal })),
      ];
      await eventually(() => client.waiting === 3, 'three waits');
      await within(client.close(), 5_000, 'close()');
      for (const wait of waits) assert.is((await within(wait, 1_000, 'a pending wait')).name, 'AbortError');
      assert.instance(await aborted(mine.signal, 1_000, 'the held lease'), LockLostError);
      assertClosedBeforeCall(await rejects(factory(client, name).acquire()), 'an acquire after close()');
      await mine[Symbol.asyncDispose](); // no release is sent any more: it ends with its lease
      await within(client.close(), 1_000, 'a second close()');
      await held.release();
    });

    it('leaves nothing locked behind an acquire that close() rejected, also on a Redis connection passed in', async () => {
      // A connection passed in stays open after close(): what an attempt out at close() took must be
      // given back over it, or the lock stays taken for a whole lease by nobody.
      let rejected = 0;
      for (let i = 0; i < 3; i++) {
        const shared = clientOptions.redis ?? s.f.passedIn;
        const redis = shared === undefined ? s.f.deployment.connect() : undefined;
        const client = new LockClient({ ...clientOptions, redis: shared ?? redis! });
        client.on('error', () => undefined);
        const name = uniqueName('contract');
        try {
          await factory(client, uniqueName('contract')).isLocked(); // connected
          const acquiring = factory(client, name)
            .acquire()
            .then(
              () => undefined,
              (error: Error) => error,
            );
          await new Promise((resolve) => setImmediate(resolve)); // the attempt is out
          await client.close();
          const outcome = await within(acquiring, 2_000, 'the acquire under way at close()');
          if (outcome) {
            rejected++;
            assert.is(outcome.name, 'AbortError');
            await eventually(async () => !(await factory(s.other, name).isLocked()), `lock ${i} given back after its acquire was rejected`, 1_000);
          }
        } finally {
          await client.close();
          if (redis) disconnect(redis);
        }
      }
      assert.ok(rejected > 0, 'at least one acquire was under way at close()');
    });

    // --- Lease

    it('issues fencing tokens that strictly increase from holder to holder, across clients and contexts', async () => {
      const name = uniqueName('contract');
      const tokens: number[] = [];
      for (const client of [s.client, s.other, fast, s.client, s.client, s.other]) {
        const lease = await factory(client, name).acquire();
        tokens.push(lease.fencingToken);
        await lease.release();
      }
      for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `${tokens}`);
    });

    it('release() gives the lock back once; a second release rejects with LockNotHeldError and leaves the next holder alone', async () => {
      const [mine, theirs] = locks(s.client, s.other);
      const lease = await mine!.acquire();
      await lease.release();
      const next = await theirs!.acquire({ waitMs: 0 });
      const error = await rejects(lease.release());
      assert.instance(error, LockNotHeldError);
      assert.is(error.code, 'ERR_LOCK_NOT_HELD');
      assert.ok(await theirs!.isLocked(), 'the next holder keeps the lock');
      await next.release();
    });

    it('lease.run(fn) runs fn in the lease context and returns what it returns', async () => {
      const [lock] = locks(s.client);
      const lease = await lock!.acquire();
      assert.is(await lock!.isHeldByCurrentContext(), false, 'outside run: a fresh context');
      assert.is(await lock!.holdCount(), 0);
      const seen = await lease.run(async () => [await lock!.isHeldByCurrentContext(), await lock!.holdCount()]);
      assert.equal(seen, [true, 1]);
      assert.is(await lease.run(() => 'sync value'), 'sync value');
      const boom = new Error('boom');
      assert.is(await rejects(lease.run(() => Promise.reject(boom))), boom);
      const error = await rejects(lease.run(42 as never));
      assert.instance(error, TypeError);
      assert.ok(error.message.includes('`fn`'), error.message);
      await lease.release();
      assert.equal(await lease.run(async () => [await lock!.isHeldByCurrentContext(), await lock!.holdCount()]), [false, 0], 'after the release');
    });

    it('releases on leaving an `await using` block, and disposing a released lease is a no-op', async () => {
      const [lock] = locks(s.client);
      {
        await using lease = await lock!.acquire();
        assert.ok(lease.fencingToken > 0);
        assert.ok(await lock!.isLocked());
      }
      assert.not.ok(await lock!.isLocked());
      {
        await using lease = await lock!.acquire();
        await lease.release();
      }
      assert.not.ok(await lock!.isLocked());
    });

    it('keeps a lease without leaseMs alive past its lease through the watchdog', async () => {
      // 900 ms, renewed every 300 ms, watched past its end. Not `fast`'s 300 ms: that lease is given up
      // (rightly) when the process or its Redis stalls ~170 ms, which a busy 2-core CI does now and then.
      const [mine, theirs] = rivals(s.f.client({ ...clientOptions, leaseMs: 900 }), s.other);
      const lease = await mine!.acquire();
      await sleep(1_200);
      assert.not.ok(lease.signal.aborted, `lost: ${String(lease.signal.reason)}`);
      const ttl = (await mine!.remainingTtlMs())!;
      assert.ok(ttl > 0 && ttl <= 900, `remaining ${ttl} ms`);
      assert.is(await theirs!.tryAcquire(), null);
      await lease.release();
      assert.not.ok(await mine!.isLocked());
    });

    it('ends a fixed leaseMs: the signal aborts with LockLostError, the lock frees, and release() rejects', async () => {
      const [mine, theirs] = locks(s.client, s.other);
      const lease = await mine!.acquire({ leaseMs: 300 });
      const ttl = (await mine!.remainingTtlMs())!;
      assert.ok(ttl > 0 && ttl <= 300, `remaining ${ttl} ms of a 300 ms lease`);
      const reason = await aborted(lease.signal, 2_000, 'the end of the fixed lease');
      assert.instance(reason, LockLostError);
      assert.is((reason as LockLostError).code, 'ERR_LOCK_LOST');
      await eventually(async () => !(await mine!.isLocked()), 'the lock expires on Redis', 1_000);
      const next = await theirs!.acquire({ waitMs: 0 });
      assert.instance(await rejects(lease.release()), LockNotHeldError);
      assert.ok(await theirs!.isLocked(), 'the late release left the next holder alone');
      await next.release();
    });

    it('ends a hold at its maxHoldMs: renewal stops, the signal aborts with ERR_LOCK_MAX_HOLD, the lock frees within a lease', async () => {
      // A 900 ms lease renewed every 300 ms: without the bound, this hold would last for ever. (Not
      // `fast`'s 300 ms: a stall of ~200 ms on a busy machine loses that lease before its bound.)
      const [mine, theirs] = rivals(s.f.client({ ...clientOptions, leaseMs: 900 }), s.other);
      const startedAt = performance.now();
      const lease = await mine!.acquire({ maxHoldMs: 1_000 });
      const reason = await aborted(lease.signal, 4_000, 'the end of maxHoldMs');
      assert.ok(performance.now() - startedAt >= 995, `not before maxHoldMs (${Math.round(performance.now() - startedAt)} ms)`);
      assert.instance(reason, LockLostError);
      assert.is((reason as LockLostError).code, 'ERR_LOCK_MAX_HOLD');
      // Not renewed any more: it ends with its 900 ms lease, and another client gets in.
      const next = await within(theirs!.acquire({ waitMs: 3_000 }), 4_000, 'the next holder once the lease ended');
      assert.instance(await rejects(lease.release()), LockNotHeldError);
      await next.release();
    });

    it("bounds every hold by the client's maxHoldMs; an acquire's own may shorten it, and release() within it frees the lock at once", async () => {
      const bounded = s.f.client({ ...clientOptions, leaseMs: 900, maxHoldMs: 1_000 });
      const [mine, theirs] = rivals(bounded, s.other);
      const lease = await mine!.acquire();
      assert.is((await aborted(lease.signal, 3_000, "the end of the client's maxHoldMs")).code, 'ERR_LOCK_MAX_HOLD');
      await within(theirs!.acquire({ waitMs: 3_000 }), 4_000, 'the next holder').then((next) => next.release());
      // Used after the waits: a lease nobody can reach any more counts as abandoned, and Bun's engine
      // collects a variable its function no longer uses while the function awaits (V8 keeps it).
      assert.instance(await rejects(lease.release()), LockNotHeldError);
      const short = await mine!.acquire({ maxHoldMs: 200 });
      await short.release();
      assert.not.ok(short.signal.aborted, 'released before its bound');
      assert.not.ok(await mine!.isLocked());
    });

    // --- forceUnlock and loss

    it('forceUnlock deletes the lock whoever holds it, wakes its waiters, and answers whether it was locked', async () => {
      const [mine, theirs] = rivals(s.client, s.other);
      const held = await theirs!.acquire(); // 30 s lease: only the force unlock can wake the waiter early
      const waiting = mine!.acquire();
      await eventually(() => s.client.waiting === 1, 'queued');
      assert.is(await theirs!.forceUnlock(), true);
      const lease = await within(waiting, 2_000, 'the waiter woken by forceUnlock');
      await lease.release();
      assert.is(await mine!.forceUnlock(), false, 'nothing was locked');
      assert.instance(await rejects(held.release()), LockNotHeldError);
    });

    it('aborts lease.signal with LockLostError when the lock is force-unlocked, by this client or another', async () => {
      const [lock] = locks(s.client);
      const lease = await lock!.acquire();
      await lock!.forceUnlock();
      assert.instance(await aborted(lease.signal, 2_000, 'the signal after forceUnlock by this client'), LockLostError);
      assert.instance(await rejects(lease.release()), LockNotHeldError);

      const [theirs, mine] = locks(fast, s.client);
      const their = await theirs!.acquire();
      await mine!.forceUnlock();
      const reason = await aborted(their.signal, 2_000, 'the signal after forceUnlock by another client');
      assert.instance(reason, LockLostError);
      assert.is((reason as LockLostError).code, 'ERR_LOCK_LOST');
      assert.instance(await rejects(their.release()), LockNotHeldError);
    });

    it('runExclusive returns what fn returns and releases; releases and rethrows when fn throws', async () => {
      const [lock] = locks(s.client);
      const result = await lock!.runExclusive(async (lease) => {
        assert.is(lease.holdCount, 1);
        assert.is(lease.name, lock!.name);
        assert.ok(await lock!.isHeldByCurrentContext());
        return 42;
      });
      assert.is(result, 42);
      assert.not.ok(await lock!.isLocked());
      const boom = new Error('boom');
      assert.is(await rejects(lock!.runExclusive(() => Promise.reject(boom))), boom);
      assert.not.ok(await lock!.isLocked());
      assert.is(
        await rejects(
          lock!.runExclusive(() => {
            throw boom;
          }),
        ),
        boom,
      );
      assert.not.ok(await lock!.isLocked());
    });

    it('runExclusive rejects with LockLostError when the hold was lost while fn ran', async () => {
      const [lock] = locks(s.client);
      const error = await rejects(
        lock!.runExclusive(async (lease) => {
          await lock!.forceUnlock();
          await aborted(lease.signal, 2_000, 'the loss');
          return 'done';
        }),
      );
      assert.instance(error, LockLostError);
      assert.not.ok(await lock!.isLocked());
    });

    // --- Reentrancy

    if (reentrant) {
      it('re-enters in runExclusive: counts holds, shares the fencing token, waits for nobody', async () => {
        const [lock] = locks(s.client);
        const seen: [number, number, number][] = [];
        await lock!.runExclusive(async (outer) => {
          seen.push([outer.holdCount, await lock!.holdCount(), outer.fencingToken]);
          await lock!.runExclusive(async (middle) => {
            seen.push([middle.holdCount, await lock!.holdCount(), middle.fencingToken]);
            const inner = await lock!.acquire({ waitMs: 0 });
            seen.push([inner.holdCount, await lock!.holdCount(), inner.fencingToken]);
            await inner.release();
            assert.is(await lock!.holdCount(), 2);
          });
          assert.is(await lock!.holdCount(), 1);
          assert.ok(await lock!.isHeldByCurrentContext());
        });
        assert.equal(
          seen.map(([count, counted]) => [count, counted]),
          [
            [1, 1],
            [2, 2],
            [3, 3],
          ],
        );
        assert.is(new Set(seen.map(([, , token]) => token)).size, 1, 'one fencing token for every level');
        assert.not.ok(await lock!.isLocked());
      });

      it('re-enters through lease.run, also with tryAcquire', async () => {
        const [lock] = locks(s.client);
        const lease = await lock!.acquire();
        const nested = await lease.run(() => lock!.tryAcquire());
        assert.ok(nested);
        assert.is(nested!.holdCount, 2);
        assert.is(nested!.fencingToken, lease.fencingToken);
        await nested!.release();
        await lease.release();
        assert.not.ok(await lock!.isLocked());
      });

      it('frees the lock and wakes a waiter only when the outermost hold is released', async () => {
        const [mine, theirs] = rivals(s.client, s.other);
        const outer = await mine!.acquire();
        let woken = false;
        const waiting = theirs!.acquire().then((lease) => ((woken = true), lease));
        await eventually(() => s.other.waiting === 1, 'the other client waits');
        const inner = await outer.run(() => mine!.acquire());
        assert.is(inner.holdCount, 2);
        await inner.release();
        await sleep(100);
        assert.not.ok(woken, 'a nested release does not wake waiters');
        assert.ok(await mine!.isLocked());
        await outer.release();
        await (await within(waiting, 2_000, 'the waiter after the outermost release')).release();
      });

      it('does not re-enter a lock that another client holds, from inside a context of its own', async () => {
        const [mine, theirs] = rivals(s.client, s.other);
        const held = await theirs!.acquire();
        await held.run(async () => assert.is(await mine!.tryAcquire(), null));
        await held.release();
      });

      it('never shortens a lease with a nested acquire', async () => {
        const [lock] = locks(s.client);
        const sentAt = performance.now();
        const outer = await lock!.acquire({ leaseMs: 1_000 });
        const nested = await outer.run(() => lock!.acquire({ leaseMs: 100 }));
        const watched = await outer.run(() => lock!.acquire()); // a watchdog acquire inside a fixed lease
        // 400 ms after the outer acquire was sent, well past the nested 100 ms lease: counted from the
        // send, since the two re-entries themselves may take hundreds of ms on a busy machine (a
        // multi-lock's on a Cluster, beside a CPU burner), and the outer lease runs meanwhile.
        await sleep(Math.max(0, sentAt + 400 - performance.now()));
        const standsAt = performance.now() - sentAt;
        if (standsAt < 800) {
          assert.not.ok(outer.signal.aborted, `the outer 1000 ms lease still stands at ${Math.round(standsAt)} ms`);
          assert.not.ok(nested.signal.aborted);
        }
        const ttl = (await lock!.remainingTtlMs())!;
        // The outer lease began on Redis after sentAt and was read before now: at least this much of
        // it is left, to the 2 ms that Redis's whole-millisecond clock and PTTL's rounding down may
        // take (a lease cut to 100 ms would have ended long before).
        const elapsed = performance.now() - sentAt;
        assert.ok(elapsed < 900 ? ttl >= 1_000 - elapsed - 2 : ttl > 0, `remaining ${ttl} ms, ${elapsed.toFixed(1)} ms after the outer acquire was sent`);
        await watched.release();
        await nested.release();
        await outer.release();

        const kept = await lock!.acquire(); // a 30 s watchdog lease
        const short = await kept.run(() => lock!.acquire({ leaseMs: 100 }));
        await sleep(200);
        assert.ok((await lock!.remainingTtlMs())! > 20_000, 'the watchdog lease was not cut to 100 ms');
        assert.not.ok(kept.signal.aborted);
        await short.release();
        await kept.release();
      });
    } else {
      it('does not re-enter: a nested tryAcquire in the holder context gets null', async () => {
        const [lock] = locks(s.client);
        await lock!.runExclusive(async () => assert.is(await lock!.tryAcquire(), null));
        assert.not.ok(await lock!.isLocked());
      });
    }
  });
}
