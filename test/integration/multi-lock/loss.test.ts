// client.multiLock(): the lease's signal aborts when any member is lost, and a release after that
// still frees the other members.
import * as assert from 'uvu/assert';
import { LockLostError, LockNotHeldError, type LockClient } from '../../../src/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { setup } from '../../helpers/fixture.ts';

const aborted = (signal: AbortSignal, ms: number) =>
  within(new Promise((resolve) => (signal.aborted ? resolve(signal.reason) : signal.addEventListener('abort', () => resolve(signal.reason), { once: true }))), ms, 'the signal');

describe('LockClient#multiLock: loss and release', (it) => {
  const s = setup(it);
  let fast: LockClient;
  it.before(() => {
    fast = s.f.client({ leaseMs: 300 });
  });
  const key = (name: string) => `relock:{${name}}`;
  const pair = () => {
    const base = uniqueName('multi');
    return [`${base}:a`, `${base}:b`] as const;
  };

  it('aborts the signal when one member is force-unlocked by another client; release frees the rest', async () => {
    const [a, b] = pair();
    const lease = await fast.multiLock([fast.lock(a), fast.lock(b)]).acquire();
    assert.is(await s.other.lock(b).forceUnlock(), true);
    const reason = await aborted(lease.signal, 2_000);
    assert.instance(reason, LockLostError);
    assert.match((reason as LockLostError).message, new RegExp(b));
    assert.is(await s.f.admin.exists(key(a)), 1, 'a is still held');
    const error = await rejects(lease.release());
    assert.instance(error, LockNotHeldError);
    assert.is(error.lockName, lease.name);
    assert.match(error.message, new RegExp(`"${b}" no longer held`));
    assert.is(await s.f.admin.exists(key(a)), 0, 'a was released all the same');
    assert.instance(await rejects(lease.release()), LockNotHeldError, 'a second release');
  });

  it('frees the other members after one expired under a fixed lease', async () => {
    const [a, b] = pair();
    const lease = await s.client.multiLock([s.client.lock(a), s.client.lock(b)]).acquire({ leaseMs: 5_000 });
    await s.f.admin.del(key(a)); // as if a's lease had run out on Redis
    assert.instance(await rejects(lease.release()), LockNotHeldError);
    assert.is(await s.f.admin.exists(key(b)), 0, 'b was released');
    assert.ok(await s.other.lock(b).tryAcquire().then((l) => l?.release().then(() => true)), 'b is free for others');
  });

  it('rejects runExclusive with LockLostError when a member is lost while fn runs', async () => {
    const [a, b] = pair();
    const multi = s.client.multiLock([s.client.lock(a), s.client.lock(b)]);
    const error = await rejects(
      multi.runExclusive(async (lease) => {
        await s.client.lock(a).forceUnlock();
        await aborted(lease.signal, 2_000);
      }),
    );
    assert.instance(error, LockLostError);
    assert.not.ok(await multi.isLocked(), 'b was released');
  });

  it('checks on Redis the members taken before a wait: one gone unnoticed makes it start over', async () => {
    const [a, b] = pair();
    const heldB = await s.other.lock(b).acquire();
    const acquiring = s.client.multiLock([s.client.lock(a), s.client.lock(b)]).acquire();
    await eventually(async () => (await s.f.admin.exists(key(a))) === 1 && s.client.waiting === 1, 'a taken, b awaited');
    // Redis loses a (a restart, a failover): its 30 s lease would not tell this process for 10 s.
    await s.f.admin.del(key(a));
    await heldB.release();
    const lease = await within(acquiring, 3_000, 'the acquire');
    assert.is(await s.f.admin.exists(key(a), key(b)), 2, 'a was taken again before the lease was handed out');
    await lease.release();
    assert.is(await s.f.admin.exists(key(a), key(b)), 0);
  });

  it('starts over when a member is lost while a later one is awaited', async () => {
    const [a, b] = pair();
    const heldB = await s.other.lock(b).acquire();
    // a is taken with a 200 ms lease, then b is awaited for longer than that: a runs out meanwhile.
    setTimeout(() => void heldB.release(), 500);
    const lease = await within(s.client.multiLock([s.client.lock(a), s.client.lock(b)]).acquire({ leaseMs: 200 }), 3_000, 'the acquire');
    assert.not.ok(lease.signal.aborted, 'handed out with every member held');
    assert.is(await s.f.admin.exists(key(a), key(b)), 2);
    await lease.release();
  });
});
