// The count-down latch's contract (../shared/CONTRACT.md, "Count-down latch"), run on the servers a
// test file hands in (one server, or a Redis Cluster): trySetCount once, countDown to 0 (the count
// after each, the keys gone at 0), count, and wait: open at once when not set, woken by the one
// message at 0 in every client (not by polling), bounded by waitMs, ended by a signal and by close(),
// let through when the latch expires (ttlMs) and when its message was lost (subscriber killed).
import type { Redis } from 'ioredis';
import * as assert from 'uvu/assert';
import { LockClient, LockError, LockTimeoutError, type CountDownLatch } from '../../src/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../helpers/describe.ts';
import { scriptCalls as countScripts, sleep } from '../helpers/fixture.ts';
import { onServers } from './servers.ts';
import { assertClosedBeforeCall } from '../helpers/closed.ts';

/** The servers a latch suite runs on, started before its first test. */
export interface LatchServers {
  /** A LockClient over them, closed by stop(). */
  client(): LockClient;
  /** A plain connection per server (every master of a Cluster). */
  readonly admins: readonly Redis[];
  stop(): Promise<void>;
}

export function latchContract(label: string, start: () => Promise<LatchServers>): void {
  describe(`Count-down latch contract: ${label}`, (it) => {
    const s = onServers(it, start);
    /** The same fresh latch on each client given. */
    const latches = (...clients: LockClient[]): CountDownLatch[] => {
      const name = uniqueName('latch');
      return clients.map((client) => client.countDownLatch(name));
    };
    /** Script calls over every server. */
    const scriptCalls = () => countScripts(...s.servers.admins);
    /** Keys under the latch's name on every server. */
    const keysOf = async (latch: CountDownLatch) => {
      const found: string[] = [];
      for (const admin of s.servers.admins) found.push(...(await admin.keys(`*{${latch.name}}*`)));
      return found;
    };

    it('sets its count once: true, then false while it is above 0; count() reads it', async () => {
      const [latch] = latches(s.client);
      assert.is(await latch!.count(), 0, 'not set: 0');
      assert.is(await latch!.trySetCount(3), true);
      assert.is(await latch!.trySetCount(5), false, 'set already');
      assert.is(await latch!.count(), 3);
    });

    it('counts down to 0, resolving with the count after each; at 0 it is deleted and can be set again', async () => {
      const [latch, seen] = latches(s.client, s.other);
      await latch!.trySetCount(3);
      assert.is(await latch!.countDown(), 2);
      assert.is(await seen!.countDown(), 1, 'another client counts the same latch down');
      assert.is(await latch!.countDown(), 0);
      assert.is(await seen!.count(), 0);
      assert.equal(await keysOf(latch!), [], 'no key is left at 0');
      assert.is(await latch!.countDown(), 0, 'counting an open latch down does nothing');
      assert.equal(await keysOf(latch!), [], 'and writes nothing');
      assert.is(await latch!.trySetCount(2), true, 'set again');
      assert.is(await latch!.count(), 2);
    });


    it('keeps counts exact up to Number.MAX_SAFE_INTEGER, read from another client too', async () => {
      // Integer replies near 2^53 are read through a float by some clients (ioredis 6 and node-redis
      // decode 9007199254740991 as 9007199254740992): counts travel as digits.
      const [latch, seen] = latches(s.client, s.other);
      const max = Number.MAX_SAFE_INTEGER;
      assert.is(await latch!.trySetCount(max), true);
      assert.is(await seen!.count(), max);
      assert.is(await seen!.countDown(), max - 1);
      assert.is(await latch!.count(), max - 1);
      assert.is(await latch!.countDown(), max - 2);
    });
    it('lets a wait on a latch that is not set through at once, with one script call', async () => {
      const [latch] = latches(s.client);
      const before = await scriptCalls();
      await within(latch!.wait(), 1_000, 'wait() on an open latch');
      // One EVALSHA; on a Cluster master that has not run the script yet, its EVAL after NOSCRIPT too.
      const calls = (await scriptCalls()) - before;
      assert.ok(calls === 1 || (calls === 2 && s.servers.admins.length > 1), `${calls} script calls`);
    });

    it('wakes every waiter of every client at 0 by one message, not by polling', async () => {
      // The clients' lease is the default 30 s: a waiter looks again on its own only after that.
      const [latch, mine, theirs] = latches(s.client, s.client, s.other);
      await latch!.trySetCount(2);
      const waits = [mine!.wait(), mine!.wait({ waitMs: 20_000 }), theirs!.wait(), theirs!.wait({ signal: new AbortController().signal })];
      await eventually(() => s.client.waiting === 2 && s.other.waiting === 2, 'every waiter queued');
      // A head's one look after it subscribed may still be on its way (over GLIDE's native core, often).
      await sleep(100);
      const before = await scriptCalls();
      await sleep(500);
      assert.is((await scriptCalls()) - before, 0, 'no script call while they wait');
      assert.is(await latch!.countDown(), 1);
      await sleep(100);
      assert.is(s.client.waiting + s.other.waiting, 4, 'a count-down above 0 lets nobody through');
      const opened = performance.now();
      await latch!.countDown();
      await within(Promise.all(waits), 2_000, 'every waiter, at 0');
      assert.ok(performance.now() - opened < 2_000);
      assert.is(s.client.waiting + s.other.waiting, 0);
    });

    it('rejects a wait with LockTimeoutError after waitMs (waitMs 0: one look)', async () => {
      const [latch] = latches(s.client);
      await latch!.trySetCount(1);
      const error = await rejects(latch!.wait({ waitMs: 150 }));
      assert.instance(error, LockTimeoutError);
      assert.is(error.code, 'ERR_LOCK_TIMEOUT');
      assert.match(error.message, `Latch "${latch!.name}" did not open within 150 ms`);
      assert.instance(await rejects(latch!.wait({ waitMs: 0 })), LockTimeoutError);
      assert.is(s.client.waiting, 0);
    });

    it("ends a wait with its signal's reason, and every wait of a closed client", async () => {
      const [latch] = latches(s.client);
      await latch!.trySetCount(1);
      const controller = new AbortController();
      const aborted = latch!.wait({ signal: controller.signal });
      await eventually(() => s.client.waiting === 1, 'queued');
      const reason = new Error('shutting down');
      controller.abort(reason);
      assert.is(await rejects(aborted), reason);
      assert.is(s.client.waiting, 0);

      const closing = s.servers.client();
      const pending = rejects(closing.countDownLatch(latch!.name).wait());
      await eventually(() => closing.waiting === 1, 'queued');
      await closing.close();
      assert.is((await pending).name, 'AbortError');
      assertClosedBeforeCall(await rejects(closing.countDownLatch(latch!.name).wait()), 'a wait after close()');
    });

    it('lets its waiters through when it expires (ttlMs), though nothing is published then', async () => {
      const [latch] = latches(s.client);
      assert.ok(await latch!.trySetCount(5, { ttlMs: 300 }));
      const started = performance.now();
      await within(latch!.wait(), 3_000, 'a wait on a latch that expires');
      assert.ok(performance.now() - started >= 250, 'not before it expired');
      assert.is(await latch!.count(), 0);
    });

    it('lets its waiters through when the message at 0 was lost with the subscriber connection', async () => {
      const [latch, waiter] = latches(s.client, s.other);
      await latch!.trySetCount(1);
      const waiting = waiter!.wait();
      await eventually(() => s.other.waiting === 1, 'queued');
      // The subscriber connections go, and the count reaches 0 while the waiter's is down.
      for (const admin of s.servers.admins) await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await latch!.countDown();
      await within(waiting, 5_000, 'the waiter, after its subscriber came back');
    });

    it('refuses bad arguments before any I/O, naming them', async () => {
      const [latch] = latches(s.client);
      const before = await scriptCalls();
      for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) {
        const error = await rejects(latch!.trySetCount(bad));
        assert.instance(error, RangeError);
        assert.match(error.message, 'count');
      }
      for (const bad of ['3', null, undefined]) assert.instance(await rejects(latch!.trySetCount(bad as unknown as number)), TypeError);
      assert.instance(await rejects(latch!.trySetCount(1, { ttlMs: 0 })), RangeError);
      assert.instance(await rejects(latch!.trySetCount(1, { ttl: 5 } as never)), TypeError);
      assert.instance(await rejects(latch!.wait({ waitMs: -1 })), RangeError);
      assert.instance(await rejects(latch!.wait({ signal: 'x' as never })), TypeError);
      assert.throws(() => s.client.countDownLatch(''), RangeError);
      assert.throws(() => s.client.countDownLatch(42 as unknown as string), TypeError);
      assert.is((await scriptCalls()) - before, 0, 'no script ran');
    });

    it("keeps its keys apart from lock(name)'s, and names a key that holds a foreign value", async () => {
      const name = uniqueName('latch');
      const lease = await s.client.lock(name).acquire();
      const latch = s.client.countDownLatch(name);
      assert.ok(await latch.trySetCount(1));
      assert.is(await latch.countDown(), 0);
      assert.ok(await s.client.lock(name).isLocked(), 'the lock of the same name is untouched');
      await lease.release();

      // A foreign hash under the latch key (on the master that serves it): every call refuses it, and leaves it as it was.
      const [foreign] = latches(s.client);
      await foreign!.trySetCount(1);
      const [key] = await keysOf(foreign!);
      const holder = (await Promise.all(s.servers.admins.map(async (a) => ((await a.keys(key!)).length > 0 ? a : undefined)))).find(Boolean)!;
      await holder.del(key!);
      await holder.hset(key!, 'f', 'v');
      for (const call of [() => foreign!.trySetCount(1), () => foreign!.countDown(), () => foreign!.count(), () => foreign!.wait({ waitMs: 100 })]) {
        const error = await rejects(call());
        assert.instance(error, LockError);
        assert.match(error.message, 'WRONGTYPE');
      }
      assert.equal(await holder.hgetall(key!), { f: 'v' });
      await holder.del(key!);
    });
  });
}
