// layout: 'redisson' against the Redisson stand-in (test/helpers/redisson), on one server and on a
// Cluster: relock's lock() and Redisson's RLock / RFencedLock on one name exclude each other, wake
// each other by message, count re-entries per side, draw fencing tokens from one counter, and outlive
// a dead holder on either side only once its lease ended.
import * as assert from 'uvu/assert';
import { LockClient, LockError, type Lease } from '../../../src/index.ts';
import { describe, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { onEveryDeployment, sleep } from '../../helpers/redisson/deployment.ts';
import type { RedissonStandIn } from '../../helpers/redisson/index.ts';

/** The scenarios every deployment runs. */
onEveryDeployment('layout redisson: lock() with RLock and RFencedLock', (it, d) => {

    it('excludes across both sides under contention, with strictly increasing fencing tokens from one counter', async () => {
      const name = uniqueName('interop');
      const [n1, n2] = [d.relock(), d.relock()];
      const [j1, j2] = [d.java(), d.java()];
      let inside = 0;
      let overlaps = 0;
      const tokens: number[] = [];
      const enter = (token: number) => {
        if (++inside > 1) overlaps++;
        tokens.push(token);
      };
      const node = async (client: LockClient) => {
        for (let i = 0; i < 6; i++) {
          await client.lock(name).runExclusive(async (lease) => {
            enter(lease.fencingToken);
            await sleep(2);
            inside--;
          });
        }
      };
      const java = async (instance: RedissonStandIn, threadId: number) => {
        const lock = instance.lock(name, { fenced: true });
        for (let i = 0; i < 6; i++) {
          enter(await lock.lockAndGetToken(threadId));
          await sleep(2);
          inside--;
          await lock.unlock(threadId);
        }
      };
      await within(Promise.all([node(n1), node(n1), node(n2), java(j1, 1), java(j1, 2), java(j2, 1)]), 20_000, 'every worker done');
      assert.is(overlaps, 0, 'never two holders at once');
      assert.is(tokens.length, 36);
      for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `token ${i} (${tokens[i]}) above the one before (${tokens[i - 1]})`);
      assert.is(Number(await d.call(name, 'GET', `redisson_lock_token:{${name}}`)), tokens.at(-1), 'the counter is the last token drawn');
      assert.is(await d.call(name, 'PTTL', `redisson_lock_token:{${name}}`), -1, 'the token key never expires, as RFencedLock keeps it');
      assert.is(await d.call(name, 'EXISTS', name), 0);
    });

    it("wakes the other side's waiter by message, not at the lease end", async () => {
      const name = uniqueName('interop');
      const node = d.relock();
      const java = d.java();
      const lease = await node.lock(name).acquire();
      const javaWaits = java.lock(name).lock(1);
      await sleep(100);
      let releasedAt = performance.now();
      await lease.release();
      await within(javaWaits, 1_000, 'the Java waiter woken by relock release');
      const javaWokeMs = performance.now() - releasedAt;
      const nodeWaits = node.lock(name).acquire({ waitMs: 20_000 });
      await sleep(100);
      releasedAt = performance.now();
      await java.lock(name).unlock(1);
      const second = await within(nodeWaits, 1_000, 'the relock waiter woken by the Java unlock');
      const nodeWokeMs = performance.now() - releasedAt;
      await second.release();
      assert.ok(javaWokeMs < 1_000 && nodeWokeMs < 1_000, `woken in ${javaWokeMs.toFixed(0)} and ${nodeWokeMs.toFixed(0)} ms, leases of 30 s`);
      assert.equal(java.unparsableMessages, [], 'every message relock published is a number Redisson parses');
    });

    it('counts re-entries per side in fields <uuid>:<n>, and each side releases only its own', async () => {
      const name = uniqueName('interop');
      const node = d.relock();
      const java = d.java();
      await node.lock(name).runExclusive(async () => {
        await node.lock(name).runExclusive(async () => {
          const fields = (await d.call(name, 'HGETALL', name)) as string[];
          assert.is(fields.length, 2, 'one owner field');
          assert.match(fields[0]!, new RegExp(`^${node.id}:\\d+$`), "the owner field is Redisson's shape <uuid>:<n>");
          assert.is(fields[1], '2', 'the re-entry counted in the field');
          assert.ok(Number(await d.call(name, 'PTTL', name)) > 29_000, "Redisson's watchdog lease by default");
          assert.is(await java.lock(name).tryLock(1), false, 'Java is kept out');
          await rejects(java.lock(name).unlock(1));
        });
        assert.is(await d.call(name, 'HGET', name, ((await d.call(name, 'HKEYS', name)) as string[])[0]!), '1', 'one level left');
      });
      assert.is(await d.call(name, 'EXISTS', name), 0);
      await java.lock(name).lock(7);
      await java.lock(name).lock(7);
      assert.is(await node.lock(name).tryAcquire(), null, 'relock is kept out');
      assert.is(await java.lock(name).getHoldCount(7), 2);
      await java.lock(name).unlock(7);
      await java.lock(name).unlock(7);
      assert.is(await d.call(name, 'EXISTS', name), 0);
    });

    it('frees the lock of a dead holder on either side at its lease end, not before', async () => {
      const name = uniqueName('interop');
      const java = d.java({ leaseMs: 900 });
      await java.lock(name).lock(1);
      java.kill();
      const node = d.relock();
      const startedAt = performance.now();
      const lease = await within(node.lock(name).acquire({ waitMs: 10_000 }), 5_000, 'relock takes it after the dead JVM lease');
      const waitedMs = performance.now() - startedAt;
      assert.ok(waitedMs > 500, `waited ${waitedMs.toFixed(0)} ms for a lease of 900 ms`);
      const dying = d.relock({ leaseMs: 900 });
      await lease.release();
      await dying.lock(name).acquire();
      await dying.close(); // renewals stop, nothing is released: a process gone
      const other = d.java();
      const waitedFrom = performance.now();
      await within(other.lock(name).lock(1), 5_000, 'Java takes it after the dead relock lease');
      assert.ok(performance.now() - waitedFrom > 300, 'not before the lease ran out');
      await other.lock(name).unlock(1);
    });

    it("aborts a relock lease Java force-unlocked, at the next renewal", async () => {
      const name = uniqueName('interop');
      const node = d.relock({ leaseMs: 900 });
      const lease: Lease = await node.lock(name).acquire();
      assert.is(await d.java().lock(name).forceUnlock(), true);
      await within(
        new Promise((resolve) => lease.signal.addEventListener('abort', resolve, { once: true })),
        2_000,
        'the lease aborted',
      );
      assert.instance(lease.signal.reason, LockError);
    });

    it('takes a multiLock whose member a Java holder holds only after Java unlocks', async () => {
      const [a, b] = [uniqueName('interop'), uniqueName('interop')];
      const node = d.relock();
      const java = d.java();
      await java.lock(b).lock(1);
      const both = node.multiLock([node.lock(a), node.lock(b)]);
      const taking = both.acquire({ waitMs: 10_000 });
      await sleep(200);
      await java.lock(b).unlock(1);
      const lease = await within(taking, 2_000, 'the multiLock woken by the Java unlock');
      assert.is(await java.lock(a).tryLock(2), false);
      await lease.release();
      assert.is(((await d.call(a, 'EXISTS', a)) as number) + ((await d.call(b, 'EXISTS', b)) as number), 0);
  });
});

describe('layout redisson: what cannot interoperate is refused before I/O', (it) => {
  it('refuses prefix, fenceTtlMs, a Redlock array and a bad layout with a TypeError naming the option', () => {
    assert.throws(() => new LockClient({ redis: 'redis://127.0.0.1:1', layout: 'redisson', prefix: 'app' }), (error: Error) => error instanceof TypeError && /`prefix`/.test(error.message));
    assert.throws(() => new LockClient({ redis: 'redis://127.0.0.1:1', layout: 'redisson', fenceTtlMs: 1_000 }), (error: Error) => error instanceof TypeError && /`fenceTtlMs`/.test(error.message));
    assert.throws(
      () => new LockClient({ redis: ['redis://127.0.0.1:1', 'redis://127.0.0.1:2', 'redis://127.0.0.1:3'], layout: 'redisson' }),
      (error: Error) => error instanceof TypeError && /`redis`.*Redlock/.test(error.message),
    );
    assert.throws(() => new LockClient({ redis: 'redis://127.0.0.1:1', layout: 'Redisson' as 'redisson' }), (error: Error) => error instanceof TypeError && /`layout`/.test(error.message));
  });

  it('refuses the kinds it does not share with ERR_LOCK_UNSUPPORTED', async () => {
    const client = new LockClient({ redis: 'redis://127.0.0.1:1', layout: 'redisson' });
    for (const make of [() => client.countDownLatch('x')]) {
      assert.throws(make, (error: Error) => error instanceof LockError && error.code === 'ERR_LOCK_UNSUPPORTED' && /redisson/.test(error.message));
    }
    await client.close();
  });
});


