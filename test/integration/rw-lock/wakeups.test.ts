import * as assert from 'uvu/assert';
import type { Lease } from '../../../src/index.ts';
import { describe, eventually, uniqueName, within } from '../../helpers/describe.ts';
import { commandStats, setup, sleep } from '../../helpers/fixture.ts';

describe('ReadWriteLock: wake-ups', (it) => {
  const s = setup(it);
  const publishes = async () => (await commandStats(s.f.admin)).publish ?? 0;

  it('wakes every waiting reader with one message on a write release: all hold within 200 ms', async () => {
    const name = uniqueName('rw');
    const writer = await s.client.readWriteLock(name).writeLock().acquire(); // 30 s lease: only the release wakes them
    const held: number[] = [];
    const readers = [s.client, s.other, s.client, s.other, s.client, s.other, s.client, s.other].map((client) =>
      client
        .readWriteLock(name)
        .readLock()
        .acquire()
        .then((lease) => (held.push(performance.now()), lease)),
    );
    await eventually(() => s.client.waiting === 4 && s.other.waiting === 4, 'eight readers wait');
    await sleep(50); // their tries after subscribing have landed
    const before = await publishes();
    const releasedAt = performance.now();
    await writer.release();
    const leases = await within(Promise.all(readers), 2_000, 'every reader');
    const slowest = Math.max(...held) - releasedAt;
    assert.ok(slowest < 200, `the last reader held ${slowest} ms after the write release`);
    // One message to the readers' channel (whatever their number) and one to the writers'.
    assert.is((await publishes()) - before, 2);
    for (const lease of leases) await lease.release();
  });

  it('lets the readers waiting at a write release in before writers, waiting or barging in (the read batch)', async () => {
    const name = uniqueName('rw');
    const first = await s.client.readWriteLock(name).writeLock().acquire();
    const order: string[] = [];
    const reads = [s.client, s.other, s.other].map((client, i) =>
      client
        .readWriteLock(name)
        .readLock()
        .acquire()
        .then((lease) => (order.push(`read ${i}`), lease)),
    );
    await eventually(() => s.client.waiting === 1 && s.other.waiting === 2, 'three readers wait');
    const write = s.other
      .readWriteLock(name)
      .writeLock()
      .acquire()
      .then((lease) => (order.push('write'), lease));
    await eventually(() => s.other.waiting === 3, 'a second writer waits');
    await sleep(50);
    const releasedAt = performance.now();
    const released = first.release();
    // Sent right behind the release on the same connection: it reaches Redis before any woken reader.
    const barging = s.client
      .readWriteLock(name)
      .writeLock()
      .acquire()
      .then((lease) => (order.push('barging write'), lease));
    await released;
    const leases = await within(Promise.all(reads), 2_000, 'the readers');
    assert.ok(performance.now() - releasedAt < 200, 'every reader within 200 ms');
    await sleep(50);
    assert.equal([...order].sort(), ['read 0', 'read 1', 'read 2'], 'the readers, and not a writer, hold');
    for (const lease of leases) await lease.release();
    await within(Promise.all([write, barging].map((writing) => writing.then((lease) => lease.release()))), 3_000, 'the writers after the readers');
  });

  it('wakes a waiting writer when the last reader leaves, not before', async () => {
    const name = uniqueName('rw');
    const readers: Lease[] = [];
    for (const client of [s.client, s.other, s.client]) readers.push(await client.readWriteLock(name).readLock().acquire());
    let written: Lease | undefined;
    const waiting = s.other
      .readWriteLock(name)
      .writeLock()
      .acquire()
      .then((lease) => (written = lease));
    await eventually(() => s.other.waiting === 1, 'the writer waits');
    await readers[0]!.release();
    await readers[1]!.release();
    await sleep(100);
    assert.is(written, undefined);
    const releasedAt = performance.now();
    await readers[2]!.release();
    await within(waiting, 1_000, 'the writer after the last reader');
    assert.ok(performance.now() - releasedAt < 500, 'woken by the last read release, not by a timer');
    await written!.release();
  });
});
