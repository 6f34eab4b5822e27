// Names with braces on a Redis Cluster: every kind keeps its keys and channels in one slot (no
// CROSSSLOT), takes, wakes and releases as with any other name.
import * as assert from 'uvu/assert';
import type { LockClient, Lease } from '../../../src/index.ts';
import { clusterSuite, SHARDED_PUBSUB } from '../../helpers/cluster.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';

/** Takes with `hold`, waits with `wait`, releases: the waiter gets in, woken by the release. */
async function handOver(waiter: LockClient, hold: () => Promise<Lease>, wait: () => Promise<Lease>): Promise<void> {
  const held = await hold();
  const waiting = wait();
  await eventually(() => waiter.waiting === 1, 'the waiter queued');
  await held.release();
  const lease = await within(waiting, 5_000, 'the waiter woken by the release');
  await lease.release();
}

describe('Redis Cluster: names with braces', (it) => {
  // A 20 s lease: a waiter that gets in within 5 s was woken by the release's message.
  const client = clusterSuite(it, { masters: 3 }, () => undefined, { leaseMs: 20_000 });
  let a: LockClient;
  let b: LockClient;
  it.before(() => {
    [a, b] = [client(), client()];
  });

  // Each shape starts a fresh name (a UUID follows it), so what Redis reads as the hash tag stays.
  for (const shape of ['}x', '{}', 'a{b}c', '{', '}{', 'x}{y}']) {
    const name = (kind: string) => `${shape}${uniqueName(kind)}`;

    it(`takes, wakes and releases a lock named ${shape}...`, async () => {
      const n = name('lock');
      await handOver(b, () => a.lock(n).acquire(), () => b.lock(n).acquire());
      assert.is(await a.lock(n).isLocked(), false);
    });

    it(`takes, wakes and releases a fair lock named ${shape}...`, async () => {
      const n = name('fair');
      if (!SHARDED_PUBSUB) {
        // Refused by design without sharded pub/sub (its grants count their receivers).
        assert.is((await rejects(a.fairLock(n).acquire())).code, 'ERR_LOCK_UNSUPPORTED');
        return;
      }
      await handOver(b, () => a.fairLock(n).acquire(), () => b.fairLock(n).acquire());
      assert.is(await a.fairLock(n).isLocked(), false);
    });

    it(`takes, wakes and releases both sides of a read-write lock named ${shape}...`, async () => {
      const n = name('rw');
      await handOver(b, () => a.readWriteLock(n).writeLock().acquire(), () => b.readWriteLock(n).readLock().acquire());
      await handOver(b, () => a.readWriteLock(n).readLock().acquire(), () => b.readWriteLock(n).writeLock().acquire());
      assert.is(await a.readWriteLock(n).writeLock().isLocked(), false);
    });

    it(`takes, wakes and releases a semaphore named ${shape}...`, async () => {
      const n = name('sem');
      await handOver(b, () => a.semaphore(n, { permits: 1 }).acquire(), () => b.semaphore(n, { permits: 1 }).acquire());
      assert.is(await a.semaphore(n, { permits: 1 }).availablePermits(), 1);
    });

    it(`takes and releases a multi-lock over locks named ${shape}...`, async () => {
      const lease = await a.multiLock([a.lock(name('m1')), a.lock(name('m2'))]).acquire();
      await lease.release();
    });

    it(`runs a job named ${shape}... once per window: its window is kept on the key's node`, async () => {
      const n = name('job');
      const [mine, theirs] = [a.job(n, { atLeastMs: 20_000, atMostMs: 30_000 }), b.job(n, { atMostMs: 30_000 })];
      assert.equal(await mine.run(() => 'ran'), { ran: true, value: 'ran' });
      assert.equal(await theirs.run(() => 'again'), { ran: false, reason: 'window' });
      const remaining = await b.lock(n).remainingTtlMs();
      assert.ok(remaining !== null && remaining > 10_000 && remaining <= 20_000, `window left ${remaining} ms`);
      await b.lock(n).forceUnlock();
      assert.equal(await theirs.run(() => 'next'), { ran: true, value: 'next' });
    });
  }
});
