import { tracingChannel } from 'node:diagnostics_channel';
import { Redis } from 'ioredis';
import * as assert from 'uvu/assert';
import { LockClient, LockNotHeldError, type Lease } from '../../../src/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { setup, sleep } from '../../helpers/fixture.ts';
import { conflicts, Recorder, sharedReads } from './support.ts';

describe('ReadWriteLock: readers share, a writer excludes', (it) => {
  const s = setup(it);

  it('lets readers of two clients hold at once, and keeps a writer out until the last leaves', async () => {
    const name = uniqueName('rw');
    const mine = await s.client.readWriteLock(name).readLock().acquire({ waitMs: 0 });
    const theirs = await s.other.readWriteLock(name).readLock().acquire({ waitMs: 0 });
    const also = await s.client.readWriteLock(name).readLock().acquire({ waitMs: 0 }); // another context of the same client
    assert.is(also.holdCount, 1);
    const writer = s.other.readWriteLock(name).writeLock();
    assert.is(await writer.tryAcquire(), null);
    let written: Lease | undefined;
    const waiting = writer.acquire().then((lease) => (written = lease));
    await eventually(() => s.other.waiting === 1, 'the writer waits');
    await mine.release();
    await also.release();
    await sleep(100);
    assert.is(written, undefined, 'a reader still holds');
    await theirs.release();
    await (await within(waiting, 2_000, 'the writer after the last reader')).release();
  });

  it('never lets a write hold overlap another hold, while readers do share (checked on recorded intervals)', async () => {
    const name = uniqueName('rw');
    const recorder = new Recorder();
    const loop = async (client: LockClient, index: number) => {
      const rw = client.readWriteLock(name);
      for (let i = 0; i < 12; i++) {
        const write = (i + index) % 5 === 0;
        await (write ? rw.writeLock() : rw.readLock()).runExclusive(() => recorder.hold(write ? 'write' : 'read', write ? 2 : 6));
      }
    };
    await Promise.all([s.client, s.other, s.client, s.other, s.client, s.other].map((client, index) => loop(client, index)));
    assert.is(recorder.intervals.length, 72);
    assert.ok(recorder.intervals.some((i) => i.side === 'write'));
    recorder.assertSafe();
    assert.ok(sharedReads(recorder.intervals) > 0, 'readers held at the same time');
  });

  it('has a checker that fails on an overlapping write hold', () => {
    assert.is(conflicts([{ side: 'read', from: 0, to: 10 }, { side: 'read', from: 5, to: 15 }]).length, 0);
    assert.is(conflicts([{ side: 'read', from: 0, to: 10 }, { side: 'write', from: 9, to: 12 }]).length, 1);
    assert.is(conflicts([{ side: 'write', from: 0, to: 10 }, { side: 'write', from: 10, to: 12 }]).length, 0);
  });

  it('answers isLocked per side: readLock() for some read hold, writeLock() for a write hold', async () => {
    const rw = s.client.readWriteLock(uniqueName('rw'));
    const [read, write] = [rw.readLock(), rw.writeLock()];
    assert.equal([await read.isLocked(), await write.isLocked()], [false, false]);
    const reader = await read.acquire();
    assert.equal([await read.isLocked(), await write.isLocked()], [true, false]);
    await reader.release();
    const writer = await write.acquire();
    assert.equal([await read.isLocked(), await write.isLocked()], [false, true]);
    const downgraded = await writer.run(() => read.acquire());
    assert.equal([await read.isLocked(), await write.isLocked()], [true, true]);
    assert.ok((await write.remainingTtlMs())! > 20_000);
    await writer.release();
    assert.equal([await read.isLocked(), await write.isLocked()], [true, false], 'the downgraded read outlives the write hold');
    await downgraded.release();
    assert.equal([await read.isLocked(), await write.isLocked()], [false, false]);
    assert.is(await read.remainingTtlMs(), null);
  });

  it('forceUnlock removes one side only: the write side frees the waiting readers, the read side the waiting writer', async () => {
    const name = uniqueName('rw');
    const rw = s.client.readWriteLock(name);
    const theirs = s.other.readWriteLock(name);
    const writer = await rw.writeLock().acquire();
    const downgraded = await writer.run(() => rw.readLock().acquire());
    assert.is(await rw.readLock().forceUnlock(), true);
    await eventually(() => downgraded.signal.aborted, 'the read lease is lost');
    assert.not.ok(writer.signal.aborted, 'the write hold stays');
    assert.ok(await rw.writeLock().isLocked());
    assert.is(await rw.readLock().forceUnlock(), false, 'no read hold left');

    const reading = theirs.readLock().acquire();
    await eventually(() => s.other.waiting === 1, 'a reader waits');
    assert.is(await theirs.writeLock().forceUnlock(), true);
    const reader = await within(reading, 2_000, 'the reader woken by the forced write unlock');
    // Forced by another client: this one learns it at its next renewal, or at the release.
    assert.instance(await rejects(writer.release()), LockNotHeldError);
    assert.is(await rw.writeLock().forceUnlock(), false, 'no write hold left');

    const writing = rw.writeLock().acquire();
    await eventually(() => s.client.waiting === 1, 'a writer waits');
    assert.is(await rw.readLock().forceUnlock(), true);
    await (await within(writing, 2_000, 'the writer woken by the forced read unlock')).release();
    assert.instance(await rejects(reader.release()), LockNotHeldError);
  });

  it('issues fencing tokens that strictly increase across write holds, read holds in between too', async () => {
    const name = uniqueName('rw');
    const tokens: number[] = [];
    for (const [client, side] of [
      [s.client, 'w'],
      [s.other, 'r'],
      [s.other, 'w'],
      [s.client, 'r'],
      [s.client, 'w'],
      [s.other, 'w'],
    ] as const) {
      const rw = client.readWriteLock(name);
      const lease = await (side === 'w' ? rw.writeLock() : rw.readLock()).acquire();
      tokens.push(lease.fencingToken);
      await lease.release();
    }
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `${tokens}`);
  });

  it('traces acquires and releases with kind read-lock and write-lock', async () => {
    const kinds: string[] = [];
    const acquire = tracingChannel('relock:acquire');
    const release = tracingChannel('relock:release');
    const handlers = { start: (context: any) => kinds.push(`acquire ${context.kind}`) };
    const releases = { start: (context: any) => kinds.push(`release ${context.kind}`) };
    acquire.subscribe(handlers as never);
    release.subscribe(releases as never);
    try {
      const rw = s.client.readWriteLock(uniqueName('rw'));
      await rw.readLock().runExclusive(() => undefined);
      await rw.writeLock().runExclusive(() => undefined);
    } finally {
      acquire.unsubscribe(handlers as never);
      release.unsubscribe(releases as never);
    }
    assert.equal(kinds, ['acquire read-lock', 'release read-lock', 'acquire write-lock', 'release write-lock']);
  });

  it('checks its arguments before any I/O', async () => {
    const redis = new Redis({ host: s.f.server.host, port: s.f.server.port, lazyConnect: true });
    const client = new LockClient({ redis });
    try {
      assert.throws(() => client.readWriteLock(''), (error: Error) => error instanceof RangeError && error.message.includes('`name`'));
      assert.throws(() => client.readWriteLock(42 as never), (error: Error) => error instanceof TypeError && error.message.includes('`name`'));
      const rw = client.readWriteLock(uniqueName('rw'));
      assert.is(rw.readLock().name, rw.name);
      assert.is(rw.writeLock().name, rw.name);
      for (const lock of [rw.readLock(), rw.writeLock()]) {
        assert.instance(await rejects(lock.acquire({ waitMs: -1 })), RangeError);
        assert.instance(await rejects(lock.tryAcquire({ leaseMs: 0 })), RangeError);
        assert.instance(await rejects(lock.acquire({ timeout: 1 } as never)), TypeError);
        assert.instance(await rejects(lock.runExclusive(undefined as never)), TypeError);
      }
      assert.is(redis.status, 'wait', 'no connection was attempted');
    } finally {
      await client.close();
      redis.disconnect();
    }
  });
});
