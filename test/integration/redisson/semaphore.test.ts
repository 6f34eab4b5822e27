// layout: 'redisson' against the Redisson stand-in, on one server and on a Cluster: relock's
// semaphore(name, { permits }) and Redisson's RPermitExpirableSemaphore share one count of permits:
// never more held than set, releases on either side wake the other's waiters by message, a dead
// holder's permits come back at their expiry, and a different number of permits is refused.
import * as assert from 'uvu/assert';
import { LockError } from '../../../src/index.ts';
import { rejects, uniqueName, within } from '../../helpers/describe.ts';
import { onEveryDeployment, sleep } from '../../helpers/redisson/deployment.ts';
import type { RedissonStandIn } from '../../helpers/redisson/index.ts';

onEveryDeployment('layout redisson: semaphore() with RPermitExpirableSemaphore', (it, d) => {
  it('never lets more permits be held than Java set, under contention from both sides', async () => {
    const name = uniqueName('interop-sem');
    const [n1, n2] = [d.relock(), d.relock()];
    const [j1, j2] = [d.java(), d.java()];
    assert.is(await j1.permitSemaphore(name).trySetPermits(3), true);
    let held = 0;
    let most = 0;
    const enter = (permits: number) => {
      held += permits;
      most = Math.max(most, held);
    };
    const node = async (permits: number) => {
      const client = permits === 2 ? n2 : n1;
      for (let i = 0; i < 5; i++) {
        await client.semaphore(name, { permits: 3 }).runExclusive(
          async () => {
            enter(permits);
            await sleep(3);
            held -= permits;
          },
          { permits },
        );
      }
    };
    const java = async (instance: RedissonStandIn) => {
      const semaphore = instance.permitSemaphore(name);
      for (let i = 0; i < 5; i++) {
        const id = await semaphore.acquire({ leaseMs: 10_000 });
        enter(1);
        await sleep(3);
        held--;
        await semaphore.release(id);
      }
    };
    await within(Promise.all([node(1), node(1), node(2), java(j1), java(j2), java(j2)]), 20_000, 'every worker done');
    assert.ok(most <= 3, `at most 3 permits held at once, saw ${most}`);
    assert.ok(most >= 2, 'the workers did overlap');
    assert.is(await j1.permitSemaphore(name).availablePermits(), 3);
    assert.is(Number(await d.call(name, 'ZCARD', `{${name}}:timeout`)), 0, 'no permit id left');
  });

  it("wakes the other side's waiter by message when a permit comes back", async () => {
    const name = uniqueName('interop-sem');
    const node = d.relock();
    const java = d.java();
    const semaphore = node.semaphore(name, { permits: 1 });
    const lease = await semaphore.acquire();
    assert.is(await d.call(name, 'GET', name), '0', "relock set Redisson's count (the limit less what it holds)");
    const javaWaits = java.permitSemaphore(name).acquire({ leaseMs: 60_000 });
    await sleep(100);
    let releasedAt = performance.now();
    await lease.release();
    const id = await within(javaWaits, 1_000, 'the Java waiter woken by the relock release');
    const javaWokeMs = performance.now() - releasedAt;
    const nodeWaits = semaphore.acquire({ waitMs: 20_000 });
    await sleep(100);
    releasedAt = performance.now();
    await java.permitSemaphore(name).release(id);
    const second = await within(nodeWaits, 1_000, 'the relock waiter woken by the Java release (its permit expires in 60 s)');
    const nodeWokeMs = performance.now() - releasedAt;
    await second.release();
    assert.ok(javaWokeMs < 1_000 && nodeWokeMs < 1_000, `woken in ${javaWokeMs.toFixed(0)} and ${nodeWokeMs.toFixed(0)} ms`);
    assert.equal(java.unparsableMessages, [], 'every message relock published is a count Redisson parses');
  });

  it("gives a dead holder's permits back at their expiry, on either side", async () => {
    const name = uniqueName('interop-sem');
    const java = d.java();
    assert.is(await java.permitSemaphore(name).trySetPermits(1), true);
    await java.permitSemaphore(name).acquire({ leaseMs: 800 });
    java.kill();
    const node = d.relock();
    const startedAt = performance.now();
    const lease = await within(node.semaphore(name, { permits: 1 }).acquire({ waitMs: 10_000 }), 5_000, 'relock takes the expired Java permit');
    assert.ok(performance.now() - startedAt > 400, 'not before the Java permit expired');
    await lease.release();
    const dying = d.relock({ leaseMs: 900 });
    await dying.semaphore(name, { permits: 1 }).acquire();
    await dying.close(); // renewals stop, nothing is released
    const other = d.java();
    assert.is(await other.permitSemaphore(name).tryAcquire(), null, 'held while its lease runs');
    const waitedFrom = performance.now();
    const id = await within(other.permitSemaphore(name).acquire({ leaseMs: 10_000 }), 5_000, 'Java takes the expired relock permit');
    assert.ok(performance.now() - waitedFrom > 200, 'not before the relock lease ran out');
    await other.permitSemaphore(name).release(id);
  });

  it('renews a relock lease of several permits past its first lease', async () => {
    const name = uniqueName('interop-sem');
    const node = d.relock({ leaseMs: 600 });
    const lease = await node.semaphore(name, { permits: 3 }).acquire({ permits: 2 });
    await sleep(1_300);
    assert.is(lease.signal.aborted, false);
    assert.is(await d.java().permitSemaphore(name).availablePermits(), 1, 'two permits still held');
    await lease.release();
    assert.is(await d.java().permitSemaphore(name).availablePermits(), 3);
  });

  it('refuses a semaphore whose permits Java set to another number with ERR_LOCK_PERMITS_MISMATCH', async () => {
    const name = uniqueName('interop-sem');
    assert.is(await d.java().permitSemaphore(name).trySetPermits(5), true);
    const error = await rejects(d.relock().semaphore(name, { permits: 3 }).acquire());
    assert.instance(error, LockError);
    assert.is((error as LockError).code, 'ERR_LOCK_PERMITS_MISMATCH');
  });
});
