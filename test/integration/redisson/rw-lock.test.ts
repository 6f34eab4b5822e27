// layout: 'redisson' against the Redisson stand-in, on one server and on a Cluster: relock's
// readWriteLock() and Redisson's RReadWriteLock on one name. Readers of both sides share it, a
// writer of either side excludes everyone, releases wake the other side by message, a Java reader's
// release leaves relock's readers their lock (the timeout keys), and a relock downgrade is one
// Redisson understands.
import * as assert from 'uvu/assert';
import { uniqueName, within } from '../../helpers/describe.ts';
import { onEveryDeployment, sleep } from '../../helpers/redisson/deployment.ts';
import type { RedissonStandIn } from '../../helpers/redisson/index.ts';

onEveryDeployment('layout redisson: readWriteLock() with RReadWriteLock', (it, d) => {
  it('lets readers of both sides share it and a writer of either side exclude everyone', async () => {
    const name = uniqueName('interop-rw');
    // Redisson's read release publishes 0, which wakes one waiter of an instance: its other waiter
    // (j1 has a reader and a writer) waits for the next message or the hash's time to live, the
    // lease of its holders (30 s by default on both sides): 2 s leases bound that wait well inside
    // the test (seen once in CI: a run that took over 20 s).
    const node = d.relock({ leaseMs: 2_000 });
    const [j1, j2] = [d.java({ leaseMs: 2_000 }), d.java({ leaseMs: 2_000 })];
    let readers = 0;
    let writers = 0;
    let mostReaders = 0;
    const broken: string[] = [];
    const check = (who: string) => {
      if (writers > 1 || (writers === 1 && readers > 0)) broken.push(`${who}: ${writers} writers, ${readers} readers`);
      mostReaders = Math.max(mostReaders, readers);
    };
    const inside = async (write: boolean, who: string) => {
      if (write) writers++;
      else readers++;
      check(who);
      await sleep(write ? 2 : 6);
      if (write) writers--;
      else readers--;
    };
    const nodeWorker = async (write: boolean) => {
      const rw = node.readWriteLock(name);
      for (let i = 0; i < 6; i++) await (write ? rw.writeLock() : rw.readLock()).runExclusive(() => inside(write, `relock ${write ? 'writer' : 'reader'}`));
    };
    const javaWorker = async (instance: RedissonStandIn, threadId: number, write: boolean) => {
      const side = write ? instance.readWriteLock(name).writeLock() : instance.readWriteLock(name).readLock();
      for (let i = 0; i < 6; i++) {
        await side.lock(threadId);
        await inside(write, `Java ${write ? 'writer' : 'reader'}`);
        await side.unlock(threadId);
      }
    };
    await within(
      Promise.all([nodeWorker(false), nodeWorker(false), nodeWorker(true), javaWorker(j1, 1, false), javaWorker(j2, 1, false), javaWorker(j1, 2, true)]),
      30_000,
      'every worker done',
    );
    assert.equal(broken, [], 'never a writer beside anyone');
    assert.ok(mostReaders >= 2, 'readers did share it');
    assert.is(await d.call(name, 'EXISTS', name), 0);
  });

  it("keeps relock's read hold when a Java reader releases, and Java's when a relock reader releases", async () => {
    const name = uniqueName('interop-rw');
    const node = d.relock({ leaseMs: 900 });
    const java = d.java();
    const lease = await node.readWriteLock(name).readLock().acquire();
    await java.readWriteLock(name).readLock().lock(1);
    await java.readWriteLock(name).readLock().unlock(1);
    assert.is(await d.call(name, 'HGET', name, 'mode'), 'read', "the hash stays: relock's timeout key lives");
    assert.is(await java.readWriteLock(name).writeLock().tryLock(1), false, 'a Java writer is kept out');
    await sleep(1_300);
    assert.is(lease.signal.aborted, false, 'the relock read hold was renewed through its timeout key');
    await java.readWriteLock(name).readLock().lock(2, { leaseMs: 10_000 });
    await lease.release();
    assert.is(await d.call(name, 'HGET', name, 'mode'), 'read', "the hash stays: the Java reader's timeout key lives");
    assert.is(await node.readWriteLock(name).writeLock().tryAcquire(), null, 'a relock writer is kept out');
    await java.readWriteLock(name).readLock().unlock(2);
    assert.is(await d.call(name, 'EXISTS', name), 0);
  });

  it("wakes the other side's waiters by message: a write release wakes readers and writers", async () => {
    const name = uniqueName('interop-rw');
    const node = d.relock();
    const java = d.java();
    const write = await node.readWriteLock(name).writeLock().acquire();
    const javaReader = java.readWriteLock(name).readLock().lock(1);
    await sleep(100);
    let releasedAt = performance.now();
    await write.release();
    // Bounds of 5 s: far below the 30 s lease a waiter would otherwise wait out, and wide enough for a
    // busy machine (the server matrix runs this beside a fault run; 1 s was once too little).
    await within(javaReader, 5_000, 'the Java reader woken by the relock write release');
    const javaWokeMs = performance.now() - releasedAt;
    await java.readWriteLock(name).readLock().unlock(1);
    await java.readWriteLock(name).writeLock().lock(2);
    const nodeReader = node.readWriteLock(name).readLock().acquire({ waitMs: 20_000 });
    await sleep(100);
    releasedAt = performance.now();
    await java.readWriteLock(name).writeLock().unlock(2);
    const read = await within(nodeReader, 5_000, 'the relock reader woken by the Java write release');
    const nodeWokeMs = performance.now() - releasedAt;
    const nodeWriter = node.readWriteLock(name).writeLock().acquire({ waitMs: 20_000 });
    await sleep(100);
    await read.release();
    await (await within(nodeWriter, 5_000, 'the relock writer woken by the read release')).release();
    assert.ok(javaWokeMs < 5_000 && nodeWokeMs < 5_000, `woken in ${javaWokeMs.toFixed(0)} and ${nodeWokeMs.toFixed(0)} ms, not at the 30 s lease`);
    assert.equal(java.unparsableMessages, []);
  });

  it('downgrades as Redisson does: a relock writer that reads keeps Java writers out, and lets Java readers in once it stops writing', async () => {
    const name = uniqueName('interop-rw');
    const node = d.relock();
    const java = d.java();
    const rw = node.readWriteLock(name);
    await rw.writeLock().runExclusive(async () => {
      const read = await rw.readLock().acquire({ waitMs: 0 });
      assert.is(await java.readWriteLock(name).readLock().tryLock(1), false, 'write mode keeps Java readers out');
      return read;
    }).then(async (read) => {
      assert.is(await d.call(name, 'HGET', name, 'mode'), 'read', 'the write release left the read hold, in read mode');
      assert.is(await java.readWriteLock(name).writeLock().tryLock(1), false, 'Java writers still kept out');
      assert.is(await java.readWriteLock(name).readLock().tryLock(1), true, 'Java readers come in');
      await java.readWriteLock(name).readLock().unlock(1);
      await read.release();
    });
    assert.is(await d.call(name, 'EXISTS', name), 0);
  });

  it('frees the lock of a dead relock writer at its lease end for a Java reader', async () => {
    const name = uniqueName('interop-rw');
    const dying = d.relock({ leaseMs: 900 });
    await dying.readWriteLock(name).writeLock().acquire();
    await dying.close(); // renewals stop, nothing is released: a process gone
    const java = d.java();
    assert.is(await java.readWriteLock(name).readLock().tryLock(1), false, 'kept out while the lease runs');
    const startedAt = performance.now();
    await within(java.readWriteLock(name).readLock().lock(1), 5_000, 'the Java reader gets in');
    assert.ok(performance.now() - startedAt > 200, 'not before the lease ended');
    await java.readWriteLock(name).readLock().unlock(1);
  });

  it('frees the lock of a dead Java writer at its lease end', async () => {
    const name = uniqueName('interop-rw');
    const java = d.java({ leaseMs: 900 });
    await java.readWriteLock(name).writeLock().lock(1);
    java.kill();
    const startedAt = performance.now();
    const lease = await within(d.relock().readWriteLock(name).readLock().acquire({ waitMs: 10_000 }), 5_000, 'a relock reader gets in');
    assert.ok(performance.now() - startedAt > 500, 'not before the lease ended');
    await lease.release();
  });
});
