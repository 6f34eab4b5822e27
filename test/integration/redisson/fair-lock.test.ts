// layout: 'redisson' against the Redisson stand-in, on one server and on a Cluster: relock's
// fairLock() and Redisson's RFairLock on one name share one queue. Waiters of both sides are served
// in the order they queued, each woken on its own channel by the release before it, a waiter that
// gives up leaves the queue without holding up those behind, and a dead holder frees it at its
// lease end.
import * as assert from 'uvu/assert';
import { eventually, uniqueName, within } from '../../helpers/describe.ts';
import { onEveryDeployment, sleep } from '../../helpers/redisson/deployment.ts';

onEveryDeployment('layout redisson: fairLock() with RFairLock', (it, d) => {
  /** A fresh name whose RFairLock a Java thread holds, its queue keys, and a relock client. */
  const heldByJava = async () => {
    const name = uniqueName('interop-fair');
    const java = d.java();
    await java.fairLock(name).lock(1);
    return { name, queue: `redisson_lock_queue:{${name}}`, timeouts: `redisson_lock_timeout:{${name}}`, java, node: d.relock() };
  };

  it('serves waiters of both sides in the order they queued, each woken by a message', async () => {
    const name = uniqueName('interop-fair');
    const queue = `redisson_lock_queue:{${name}}`;
    const node = d.relock();
    const java = d.java();
    await java.fairLock(name).lock(99);
    const served: string[] = [];
    const waits: Promise<void>[] = [];
    const joinNode = (label: string) =>
      node
        .fairLock(name)
        .acquire()
        .then(async (lease) => {
          served.push(label);
          await sleep(20);
          await lease.release();
        });
    const joinJava = (label: string, threadId: number) =>
      java
        .fairLock(name)
        .lock(threadId)
        .then(async () => {
          served.push(label);
          await sleep(20);
          await java.fairLock(name).unlock(threadId);
        });
    const order = ['node-1', 'java-1', 'node-2', 'java-2', 'node-3'];
    for (const [i, label] of order.entries()) {
      waits.push(label.startsWith('node') ? joinNode(label) : joinJava(label, i + 1));
      await eventually(async () => Number(await d.call(name, 'LLEN', queue)) === i + 1, `${label} queued`);
    }
    const releasedAt = performance.now();
    await java.fairLock(name).unlock(99);
    await within(Promise.all(waits), 3_000, 'every waiter served by messages, not leases (30 s)');
    assert.equal(served, order, 'served in queue order across both sides');
    assert.ok(performance.now() - releasedAt < 3_000);
    assert.equal(java.unparsableMessages, []);
    assert.is(Number(await d.call(name, 'EXISTS', name, queue, `redisson_lock_timeout:{${name}}`)), 0, 'nothing left');
  });

  it('takes a relock waiter that gives up out of the queue, and the Java waiter behind it is served', async () => {
    const name = uniqueName('interop-fair');
    const queue = `redisson_lock_queue:{${name}}`;
    const node = d.relock();
    const java = d.java();
    const holder = await node.fairLock(name).acquire();
    const controller = new AbortController();
    const leaving = node.fairLock(name).acquire({ signal: controller.signal });
    await eventually(async () => Number(await d.call(name, 'LLEN', queue)) === 1, 'the relock waiter queued');
    const javaWaits = java.fairLock(name).lock(1);
    await eventually(async () => Number(await d.call(name, 'LLEN', queue)) === 2, 'the Java waiter queued behind');
    controller.abort();
    await leaving.catch(() => undefined);
    assert.is(Number(await d.call(name, 'LLEN', queue)), 1, 'the relock waiter left');
    await holder.release();
    await within(javaWaits, 1_000, 'the Java waiter, now the head, woken by the release');
    await java.fairLock(name).unlock(1);
  });

  it('never queues a try (tryAcquire, waitMs 0), as Redisson\'s tryLock() without a wait', async () => {
    const { name, queue, timeouts, java, node } = await heldByJava();
    assert.is(await node.fairLock(name).tryAcquire(), null);
    const error = await node
      .fairLock(name)
      .acquire({ waitMs: 0 })
      .then(
        () => undefined,
        (e: Error & { code?: string }) => e,
      );
    assert.is(error?.code, 'ERR_LOCK_TIMEOUT');
    assert.is(Number(await d.call(name, 'EXISTS', queue, timeouts)), 0, 'no entry in the queue or its deadlines');
    await java.fairLock(name).unlock(1);
    const lease = await node.fairLock(name).tryAcquire();
    assert.ok(lease, 'a try takes the free lock');
    await lease.release();
  });

  it('queues every relock waiter with fairLockWaitTimeout whatever its waitMs: deadlines spaced as Java\'s', async () => {
    const { name, queue, timeouts, java, node } = await heldByJava();
    const waits = [node.fairLock(name).acquire({ waitMs: 5_000 }), node.fairLock(name).acquire({ waitMs: 5_000 })];
    await eventually(async () => Number(await d.call(name, 'LLEN', queue)) === 2, 'both relock waiters queued');
    const [first, second] = (await d.call(name, 'LRANGE', queue, 0, -1)) as string[];
    const spacing = Number(await d.call(name, 'ZSCORE', timeouts, second!)) - Number(await d.call(name, 'ZSCORE', timeouts, first!));
    assert.is(spacing, 300_000, "each deadline is the one before's plus Redisson's 5 min, not the caller's waitMs");
    await java.fairLock(name).unlock(1);
    for (const lease of await within(Promise.all(waits.map((w) => w.then(async (l) => (await l.release(), l)))), 3_000, 'both served')) assert.ok(lease.fencingToken > 0);
  });

  it('frees the lock of a dead Java holder at its lease end for a relock waiter', async () => {
    const name = uniqueName('interop-fair');
    const java = d.java({ leaseMs: 900 });
    await java.fairLock(name).lock(1);
    java.kill();
    const startedAt = performance.now();
    const lease = await within(d.relock().fairLock(name).acquire({ waitMs: 10_000 }), 5_000, 'relock takes it');
    assert.ok(performance.now() - startedAt > 500, 'not before the lease ended');
    assert.ok(lease.fencingToken > 0);
    await lease.release();
  });

  it('frees the lock of a dead relock holder at its lease end for a Java waiter', async () => {
    const name = uniqueName('interop-fair');
    const dying = d.relock({ leaseMs: 900 });
    await dying.fairLock(name).acquire();
    await dying.close(); // renewals stop, nothing is released
    const java = d.java();
    const startedAt = performance.now();
    await within(java.fairLock(name).lock(1), 5_000, 'the Java waiter takes it');
    assert.ok(performance.now() - startedAt > 200, 'not before the lease ended');
    await java.fairLock(name).unlock(1);
  });

  it('re-enters per side and renews a relock hold past its first lease', async () => {
    const name = uniqueName('interop-fair');
    const node = d.relock({ leaseMs: 600 });
    const lock = node.fairLock(name);
    await lock.runExclusive(async () => {
      await lock.runExclusive(async () => {
        assert.is(await lock.holdCount(), 2);
        await sleep(1_000);
        assert.is(await d.java().fairLock(name).tryLock(1), false, 'Java kept out');
      });
    });
    assert.is(await d.call(name, 'EXISTS', name), 0);
  });
});
