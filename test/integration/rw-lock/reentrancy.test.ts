import * as assert from 'uvu/assert';
import { LockError } from '../../../src/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { scriptCalls as countScripts, setup, sleep } from '../../helpers/fixture.ts';

describe('ReadWriteLock: reentrancy, downgrade, upgrade', (it) => {
  const s = setup(it);
  const scriptCalls = () => countScripts(s.f.admin);

  it('re-enters each side in its context, sharing the fencing token', async () => {
    const rw = s.client.readWriteLock(uniqueName('rw'));
    for (const lock of [rw.readLock(), rw.writeLock()]) {
      await lock.runExclusive(async (outer) => {
        const inner = await lock.acquire({ waitMs: 0 });
        assert.is(inner.holdCount, 2);
        assert.is(inner.fencingToken, outer.fencingToken);
        assert.is(await lock.holdCount(), 2);
        await inner.release();
        assert.is(await lock.holdCount(), 1);
      });
      assert.not.ok(await lock.isLocked());
    }
  });

  it('downgrades: the writer context takes the read lock although another writer waits, and keeps it after the write release', async () => {
    const name = uniqueName('rw');
    const rw = s.client.readWriteLock(name);
    const writer = await rw.writeLock().acquire();
    const waiting = s.other.readWriteLock(name).writeLock().acquire();
    waiting.catch(() => undefined); // awaited below; a failed assertion must not leave it unhandled
    await eventually(() => s.other.waiting === 1, 'another writer waits');
    const read = await within(
      writer.run(() => rw.readLock().acquire({ waitMs: 0 })),
      1_000,
      'the downgrade',
    );
    assert.is(read.holdCount, 1);
    assert.ok(read.fencingToken > writer.fencingToken, 'a fresh read hold gets its own token');
    assert.ok(await read.run(() => rw.readLock().isHeldByCurrentContext()));
    await writer.release();
    assert.ok(await rw.readLock().isLocked(), 'the read hold outlives the write hold');
    assert.is(await s.other.readWriteLock(name).writeLock().tryAcquire(), null, 'and keeps writers out');
    await read.release();
    await (await within(waiting, 2_000, 'the other writer after the downgraded read')).release();
  });

  it('refuses an upgrade at once with ERR_LOCK_UPGRADE, from acquire, tryAcquire and runExclusive, sending nothing', async () => {
    const name = uniqueName('rw');
    const rw = s.client.readWriteLock(name);
    const other = await s.other.readWriteLock(name).readLock().acquire(); // a writer would have to wait for ever
    await rw.readLock().runExclusive(async () => {
      const before = await scriptCalls();
      const started = performance.now();
      for (const call of [() => rw.writeLock().acquire(), () => rw.writeLock().acquire({ waitMs: 60_000 }), () => rw.writeLock().tryAcquire(), () => rw.writeLock().runExclusive(() => 1)]) {
        const error = await within(rejects(call()), 1_000, 'the refused upgrade');
        assert.instance(error, LockError);
        assert.is(error.code, 'ERR_LOCK_UPGRADE');
        assert.is(error.lockName, name);
      }
      assert.ok(performance.now() - started < 1_000);
      assert.is((await scriptCalls()) - before, 0, 'refused before any I/O');
      assert.is(s.client.waiting, 0);
    });
    await other.release();
    await (await rw.writeLock().acquire({ waitMs: 0 })).release(); // outside the read context: a fresh writer
  });

  it('re-enters the write lock from a context holding the write lock and a downgraded read, but not after the write release', async () => {
    const rw = s.client.readWriteLock(uniqueName('rw'));
    const write = rw.writeLock();
    await write.runExclusive(async (writer) => {
      await rw.readLock().runExclusive(async () => {
        const again = await write.acquire({ waitMs: 0 });
        assert.is(again.holdCount, 2);
        assert.is(again.fencingToken, writer.fencingToken);
        await again.release();
      });
    });
    const writer = await write.acquire();
    const read = await writer.run(() => rw.readLock().acquire());
    await writer.release();
    const error = await read.run(() => rejects(write.acquire()));
    assert.is(error.code, 'ERR_LOCK_UPGRADE', 'only the read hold is left in that context');
    await read.release();
  });

  it('never shortens a lease with a nested acquire, nor the write lease with a downgrade', async () => {
    const rw = s.client.readWriteLock(uniqueName('rw'));
    const writer = await rw.writeLock().acquire({ leaseMs: 1_000 });
    const nested = await writer.run(() => rw.writeLock().acquire({ leaseMs: 100 }));
    const read = await writer.run(() => rw.readLock().acquire({ leaseMs: 100 }));
    await sleep(400);
    assert.not.ok(writer.signal.aborted);
    assert.ok((await rw.writeLock().remainingTtlMs())! > 400);
    assert.ok(read.signal.aborted, 'the read hold has a lease of its own (100 ms)');
    assert.not.ok(await rw.readLock().isLocked());
    await nested.release();
    await writer.release();
  });
});
