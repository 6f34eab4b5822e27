// The Lock contract's Lease and waiting behaviours, run against client.semaphore() with one permit, on
// the servers a test file hands in (one server, or the masters of a Redlock client).
//
// lockContract() (lock-contract.ts) cannot run a Semaphore directly, nor through an honest adapter:
// a Semaphore is not a `Lock`. Its tests call isLocked(), isHeldByCurrentContext(), holdCount(),
// remainingTtlMs() and forceUnlock() throughout, and the Semaphore interface has none of them (an
// adapter would have to read relock's keys behind the semaphore's back, and could not make a
// force-unlock reach this client's watchdog). Reentrancy does not apply either: by contract every
// semaphore acquire is its own lease (holdCount 1), even nested, so it is checked here in its
// negative form, as lockContract does for a kind with `reentrant: false`. What does apply is below,
// the contract's tests rewritten for the Semaphore's API: the Lease (token, holdCount, signal,
// release once, run, `await using`), runExclusive, waitMs/abort/close(), waking without polling and
// without the herd, the subscriber coming back, and nothing left taken behind a rejected acquire.
import type { Redis } from 'ioredis';
import * as assert from 'uvu/assert';
import { LockClient, LockLostError, LockNotHeldError, LockTimeoutError, type Lease, type Semaphore } from '../../src/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../helpers/describe.ts';
import { scriptCalls as countScripts, sleep } from '../helpers/fixture.ts';
import { onServers } from './servers.ts';

/** The servers a contract suite runs on, started before its first test. */
export interface ContractServers {
  /** A LockClient over them, closed by stop(). */
  client(): LockClient;
  /** A plain connection per server, for counting commands and killing connections. */
  readonly admins: readonly Redis[];
  /** A LockClient over connections passed in (close() leaves them open), and those connections. */
  passedIn(): { client: LockClient; connections: { disconnect(): void }[] };
  stop(): Promise<void>;
}

/**
 * Runs the semaphore's Lease contract.
 * @param label how the suite names the semaphore, e.g. `'client.semaphore() with one permit'`
 * @param start starts the servers (and stops them in what it returns)
 */
export function semaphoreContract(label: string, start: () => Promise<ContractServers>): void {
  describe(`Lease contract: ${label}`, (it) => {
    const s = onServers(it, start);
    /** The same fresh one-permit semaphore on each client given. */
    const semaphores = (...clients: LockClient[]): Semaphore[] => {
      const name = uniqueName('contract');
      return clients.map((client) => client.semaphore(name, { permits: 1 }));
    };
    /** Script calls over every server. */
    const scriptCalls = () => countScripts(...s.servers.admins);

    it('acquires a free semaphore: a lease with its name, a fencing token, holdCount 1 and a live signal', async () => {
      const [sem] = semaphores(s.client);
      const lease = await sem!.acquire();
      assert.is(lease.name, sem!.name);
      assert.ok(Number.isSafeInteger(lease.fencingToken) && lease.fencingToken > 0, `token ${lease.fencingToken}`);
      assert.is(lease.holdCount, 1);
      assert.is(lease.signal.aborted, false);
      assert.is(await sem!.availablePermits(), 0);
      await lease.release();
      assert.is(await sem!.availablePermits(), 1);
      assert.is(lease.signal.aborted, false, 'a release is not a loss');
    });

    it('tryAcquire gives a lease when free, null when another client or another context holds it', async () => {
      const [mine, theirs] = semaphores(s.client, s.other);
      const lease = await mine!.tryAcquire();
      assert.ok(lease);
      assert.is(await theirs!.tryAcquire(), null, 'another client');
      assert.is(await mine!.tryAcquire(), null, 'another context of the same client');
      await lease!.release();
      const fixed = await theirs!.tryAcquire({ leaseMs: 5_000 });
      assert.ok(fixed);
      await fixed!.release();
    });

    it('takes a fresh lease outside any context: two acquire() calls of one client exclude each other', async () => {
      const [sem] = semaphores(s.client);
      const first = await sem!.acquire();
      const second = sem!.acquire();
      await eventually(() => s.client.waiting === 1, 'the second acquire waits');
      await first.release();
      const lease = await within(second, 2_000, 'the second acquire, after the first release');
      assert.ok(lease.fencingToken > first.fencingToken);
      await lease.release();
    });

    it('does not re-enter: a nested tryAcquire in the holder context gets null', async () => {
      const [sem] = semaphores(s.client);
      await sem!.runExclusive(async (lease) => {
        assert.is(await sem!.tryAcquire(), null);
        assert.is(await lease.run(() => sem!.tryAcquire()), null);
      });
      assert.is(await sem!.availablePermits(), 1);
    });

    it('tries once with waitMs 0: LockTimeoutError when held, never queued', async () => {
      const [mine, theirs] = semaphores(s.client, s.other);
      const held = await theirs!.acquire();
      const error = await rejects(mine!.acquire({ waitMs: 0 }));
      assert.instance(error, LockTimeoutError);
      assert.is(error.code, 'ERR_LOCK_TIMEOUT');
      assert.is(s.client.waiting, 0);
      await held.release();
      await (await mine!.acquire({ waitMs: 0 })).release();
    });

    it('wakes a waiter on release, long before the holder lease ends, and the waiter sends nothing while it sleeps', async () => {
      const [mine, theirs] = semaphores(s.client, s.other);
      const held = await theirs!.acquire(); // a 30 s watchdog lease: no expiry, no renewal for 10 s
      const waiting = mine!.acquire();
      await eventually(() => s.client.waiting === 1, 'queued');
      await sleep(50);
      const before = await scriptCalls();
      await sleep(500);
      assert.is((await scriptCalls()) - before, 0, 'script calls during 500 ms of sleep: polling');
      const releasedAt = performance.now();
      await held.release();
      const lease = await within(waiting, 2_000, 'the waiter after the release');
      assert.ok(performance.now() - releasedAt < 1_000);
      await lease.release();
    });

    it('wakes one waiter per released permit, not the herd', async () => {
      const [theirs, ...mine] = semaphores(s.other, s.client, s.client, s.client);
      const held = await theirs!.acquire();
      const acquired: Lease[] = [];
      const waits = mine.map((sem) => sem.acquire().then((lease) => void acquired.push(lease)));
      await eventually(() => s.client.waiting === 3, 'three queued');
      await held.release();
      await eventually(() => acquired.length === 1, 'one waiter has the permit');
      await sleep(100);
      assert.is(acquired.length, 1);
      for (let i = 0; i < 3; i++) {
        await eventually(() => acquired.length === i + 1, `waiter ${i + 1}`);
        await acquired[i]!.release();
      }
      await Promise.all(waits);
    });

    it('retries at once when the subscriber connection comes back (what was published meanwhile is lost)', async () => {
      const [mine, theirs] = semaphores(s.client, s.other);
      const held = await theirs!.acquire();
      const waiting = mine!.acquire();
      await eventually(() => s.client.waiting === 1, 'queued');
      for (const admin of s.servers.admins) await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await held.release(); // published while the subscriber is down
      await (await within(waiting, 5_000, 'the waiter after the subscriber came back')).release();
    });

    it('cancels a runExclusive wait with signal.reason without running fn', async () => {
      const [mine, theirs] = semaphores(s.client, s.other);
      const held = await theirs!.acquire();
      let ran = false;
      const error = await rejects(mine!.runExclusive(() => void (ran = true), { signal: AbortSignal.timeout(100) }));
      assert.is(error.name, 'TimeoutError');
      assert.instance(await rejects(mine!.runExclusive(() => void (ran = true), { waitMs: 0 })), LockTimeoutError);
      assert.not.ok(ran);
      assert.is(s.client.waiting, 0);
      await held.release();
    });

    it('release() gives the permit back once; a second release rejects with LockNotHeldError and leaves the next holder alone', async () => {
      const [mine, theirs] = semaphores(s.client, s.other);
      const lease = await mine!.acquire();
      await lease.release();
      const next = await theirs!.acquire({ waitMs: 0 });
      const error = await rejects(lease.release());
      assert.instance(error, LockNotHeldError);
      assert.is(error.code, 'ERR_LOCK_NOT_HELD');
      assert.is(await theirs!.availablePermits(), 0, 'the next holder keeps the permit');
      await next.release();
    });

    it('lease.run(fn) runs fn and returns what it returns; releases on leaving an `await using` block', async () => {
      const [sem] = semaphores(s.client);
      {
        await using lease = await sem!.acquire();
        assert.is(await lease.run(() => 'sync value'), 'sync value');
        const boom = new Error('boom');
        assert.is(await rejects(lease.run(() => Promise.reject(boom))), boom);
        const error = await rejects(lease.run(42 as never));
        assert.instance(error, TypeError);
        assert.ok(error.message.includes('`fn`'), error.message);
      }
      assert.is(await sem!.availablePermits(), 1);
    });

    it('runExclusive returns what fn returns and releases; releases and rethrows when fn throws', async () => {
      const [sem] = semaphores(s.client);
      assert.is(await sem!.runExclusive(async (lease) => (assert.is(lease.holdCount, 1), 42)), 42);
      assert.is(await sem!.availablePermits(), 1);
      const boom = new Error('boom');
      assert.is(await rejects(sem!.runExclusive(() => Promise.reject(boom))), boom);
      assert.is(await sem!.availablePermits(), 1);
    });

    // A fixed lease that ends, and a watchdog hold cut at maxHoldMs (released by runExclusive at once: still this owner's on Redis).
    for (const [options, code] of [
      [{ leaseMs: 200 }, 'ERR_LOCK_LOST'],
      [{ maxHoldMs: 200 }, 'ERR_LOCK_MAX_HOLD'],
    ] as const) {
      it(`runExclusive rejects with LockLostError ${code} when ${Object.keys(options)[0]} ended while fn ran, and the permit comes back`, async () => {
        const [sem, theirs] = semaphores(s.client, s.other);
        const error = await rejects(
          sem!.runExclusive(async (lease) => {
            await within(new Promise((resolve) => lease.signal.addEventListener('abort', resolve, { once: true })), 2_000, 'the end of the lease');
            return 'done';
          }, options),
        );
        assert.instance(error, LockLostError);
        assert.is((error as LockLostError).code, code);
        await eventually(async () => (await sem!.availablePermits()) === 1, 'the permit back', 1_000);
        await (await theirs!.acquire({ waitMs: 0 })).release();
      });
    }

    it('counts permits exactly at the largest limit it takes, read from another client too', async () => {
      // Integer replies near 2^53 are read through a float by some clients: counts travel as digits.
      // A Redlock client takes fewer permits (RangeError): its largest limit is checked instead.
      const name = uniqueName('contract');
      let limit = Number.MAX_SAFE_INTEGER;
      let mine: Semaphore;
      try {
        mine = s.client.semaphore(name, { permits: limit });
      } catch (error) {
        assert.instance(error, RangeError);
        limit = Number(/to (\d+)/.exec((error as Error).message)?.[1]);
        mine = s.client.semaphore(name, { permits: limit });
      }
      const theirs = s.other.semaphore(name, { permits: limit });
      assert.is(await theirs.availablePermits(), limit);
      const lease = await mine.acquire({ permits: 3 });
      assert.is(await theirs.availablePermits(), limit - 3);
      const error = await rejects(s.other.semaphore(name, { permits: limit - 1 }).tryAcquire());
      assert.is(error.code, 'ERR_LOCK_PERMITS_MISMATCH');
      assert.ok(error.message.includes(String(limit)), `the stored limit, exactly: ${error.message}`);
      await lease.release();
    });

    it('leaves nothing taken behind an acquire that close() rejected, also on a Redis connection passed in', async () => {
      let rejected = 0;
      for (let i = 0; i < 3; i++) {
        const { client, connections } = s.servers.passedIn();
        const name = uniqueName('contract');
        try {
          await client.semaphore(uniqueName('contract'), { permits: 1 }).availablePermits(); // connected
          const acquiring = client
            .semaphore(name, { permits: 1 })
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
            await eventually(async () => (await s.other.semaphore(name, { permits: 1 }).availablePermits()) === 1, `permit ${i} given back`, 1_000);
          }
        } finally {
          await client.close();
          for (const redis of connections) redis.disconnect();
        }
      }
      assert.ok(rejected > 0, 'at least one acquire was under way at close()');
    });
  });
}
