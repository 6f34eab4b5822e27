// A lease dropped without a release (a caller's bug) stops being renewed once it is garbage-collected:
// the watchdog does not keep it alive, the lock ends within one lease, and the client warns with
// ERR_LOCK_ABANDONED naming the lock. A lease still referenced, or released, is left alone.
import * as assert from 'uvu/assert';
import type { Lease, LockClient, LockError } from '../../../src/index.ts';
import { describe, uniqueName } from '../../helpers/describe.ts';
import { setup } from '../../helpers/fixture.ts';
import { collectUntil } from '../../helpers/gc.ts';
import { setupMasters } from '../redlock/masters.ts';

/**
 * A lease is lost only after ~1.8 s without an answered renewal, which a busy machine's GC and
 * scheduling pauses do not reach (with 600 ms, 200 ms of stalls can lose one: then a dropped lease is
 * lost before it is collected, and a kept one is lost too).
 */
const LEASE_MS = 2_000;
const lockKey = (name: string) => `relock:{${name}}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Acquires and drops the lease: nothing refers to it once this returns. */
async function acquireAndDrop(client: LockClient, name: string): Promise<void> {
  await client.lock(name).acquire();
}

describe('abandoned leases', (it) => {
  const s = setup(it, { leaseMs: LEASE_MS });

  it('stops renewing a lease garbage-collected without a release, warns ERR_LOCK_ABANDONED, and the lock ends within a lease', async () => {
    const name = uniqueName('abandoned');
    const warnings: LockError[] = [];
    s.client.on('warning', (warning) => warnings.push(warning));
    await acquireAndDrop(s.client, name);
    await collectUntil(() => warnings.length > 0);
    assert.is(warnings.length, 1, 'one warning');
    assert.is(warnings[0]!.code, 'ERR_LOCK_ABANDONED');
    assert.is(warnings[0]!.lockName, name);
    assert.match(warnings[0]!.message, name);
    const pttl = await s.f.admin.pttl(lockKey(name));
    assert.ok(pttl <= LEASE_MS, `PTTL ${pttl} ms, at most a lease`);
    // The client stays open: its watchdog would have renewed the lease by now (every 200 ms).
    await sleep(LEASE_MS + 200);
    assert.is(await s.f.admin.exists(lockKey(name)), 0, 'the lock ended with its lease');
  });

  it('keeps renewing a lease still referenced, and warns about none released', async () => {
    const [kept, released] = [uniqueName('kept'), uniqueName('released')];
    const warnings: LockError[] = [];
    const client = s.f.client({ leaseMs: LEASE_MS });
    client.on('warning', (warning) => warnings.push(warning));
    const lease = await client.lock(kept).acquire();
    await (await client.lock(released).acquire()).release();
    await client.lock(released).runExclusive(() => undefined);
    await collectUntil(() => warnings.length > 0, 20);
    await sleep(LEASE_MS + 300);
    assert.equal(warnings, []);
    assert.is(await s.f.admin.exists(lockKey(kept)), 1, 'renewed past its lease');
    await lease.release();
  });
});

/** Takes a lease of every kind of `client` and keeps it through collections and past its lease: none may count as abandoned. */
async function keepsEveryKind(client: LockClient, kinds: Record<string, () => Promise<Lease>>): Promise<void> {
  const warnings: LockError[] = [];
  client.on('warning', (warning) => warnings.push(warning));
  const leases = await Promise.all(Object.values(kinds).map((take) => take()));
  await collectUntil(() => warnings.length > 0, 20);
  await sleep(LEASE_MS + 300);
  assert.equal(warnings.map((w) => w.message), [], 'no lease held by the caller counts as abandoned');
  for (const [i, kind] of Object.keys(kinds).entries()) {
    assert.not.ok(leases[i]!.signal.aborted, `${kind}: still held`);
    await leases[i]!.release();
  }
}

describe('abandoned leases: none while the caller holds them, for every kind', (it) => {
  const s = setup(it, { leaseMs: LEASE_MS });
  const masters = setupMasters(it, 3);

  it('on one server: lock, fair lock, semaphore, both sides of a read-write lock, a multi-lock', async () => {
    const c = s.client;
    await keepsEveryKind(c, {
      lock: () => c.lock(uniqueName()).acquire(),
      fairLock: () => c.fairLock(uniqueName()).acquire(),
      semaphore: () => c.semaphore(uniqueName(), { permits: 2 }).acquire(),
      readLock: () => c.readWriteLock(uniqueName()).readLock().acquire(),
      writeLock: () => c.readWriteLock(uniqueName()).writeLock().acquire(),
      multiLock: () => c.multiLock([c.lock(uniqueName()), c.fairLock(uniqueName())]).acquire(),
    });
  });

  it('on a Redlock client: lock, fair lock (its member leases), semaphore, read-write lock', async () => {
    const c = masters.client({ leaseMs: LEASE_MS });
    await keepsEveryKind(c, {
      lock: () => c.lock(uniqueName()).acquire(),
      fairLock: () => c.fairLock(uniqueName()).acquire(),
      semaphore: () => c.semaphore(uniqueName(), { permits: 2 }).acquire(),
      writeLock: () => c.readWriteLock(uniqueName()).writeLock().acquire(),
    });
  });
});
