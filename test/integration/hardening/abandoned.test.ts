// A lease dropped without a release (a caller's bug) stops being renewed once it is garbage-collected:
// the watchdog does not keep it alive, the lock ends within one lease, and the client warns with
// ERR_LOCK_ABANDONED naming the lock. A lease still referenced, or released, is left alone.
import * as assert from 'uvu/assert';
import type { LockClient, LockError } from '../../../src/index.ts';
import { describe, uniqueName } from '../../helpers/describe.ts';
import { setup } from '../../helpers/fixture.ts';
import { collectUntil } from '../../helpers/gc.ts';

const LEASE_MS = 600;
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
    s.other.on('warning', (warning) => warnings.push(warning));
    const lease = await s.other.lock(kept).acquire();
    await (await s.other.lock(released).acquire()).release();
    await s.other.lock(released).runExclusive(() => undefined);
    await collectUntil(() => warnings.length > 0, 20);
    await sleep(LEASE_MS + 200);
    assert.equal(warnings, []);
    assert.is(await s.f.admin.exists(lockKey(kept)), 1, 'renewed past its lease');
    await lease.release();
  });
});
