// client.multiLock(): the order members are taken in. The two sides of one read-write lock are one
// resource; no other member may sort between them, whatever its name, or two multi-locks deadlock.
import * as assert from 'uvu/assert';
import type { AcquireTraceContext, Lease } from '../../../src/index.ts';
import { tracingChannel } from 'node:diagnostics_channel';
import { describe, eventually, uniqueName, within } from '../../helpers/describe.ts';
import { setup } from '../../helpers/fixture.ts';

describe('LockClient#multiLock: member order', (it) => {
  const s = setup(it);
  let third: typeof s.client;
  it.before(() => {
    third = s.f.client();
  });

  it('never deadlocks over a read-write lock and a lock whose name would sort between its two sides', async () => {
    const name = uniqueName('order');
    // Its key, `relock:{<name>}:rw s}`, sorts between `relock:{<name>}:rw read` and `...:rw write`.
    const crafted = `${name}}:rw s`;
    const rw = `relock:{${name}}:rw`;
    const holder = await s.client.readWriteLock(name).writeLock().acquire();
    // A reader multi-lock waits for the read side (registered as a waiting reader) ...
    const reader = s.other.multiLock([s.other.lock(crafted), s.other.readWriteLock(name).readLock()]);
    const reading = reader.acquire({ waitMs: 8_000 });
    await eventually(async () => s.other.waiting === 1 && (await s.f.admin.zcard(`${rw}:waiting`)) === 1, 'the reader waits for the read side');
    // ... then a writer multi-lock waits for the write side.
    const writer = third.multiLock([third.readWriteLock(name).writeLock(), third.lock(crafted)]);
    const writing = writer.acquire({ waitMs: 8_000 });
    await eventually(() => third.waiting === 1, 'the writer waits for the write side');
    // The write release admits the waiting reader ahead of the writer. Had the writer taken the
    // crafted lock before the write side, each would now hold what the other waits for.
    await holder.release();
    const done = (acquiring: Promise<Lease>) => acquiring.then((lease) => lease.release());
    const outcomes = await within(Promise.allSettled([done(reading), done(writing)]), 15_000, 'both multi-locks');
    const failures = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [String(outcome.reason)] : []));
    assert.equal(failures, [], 'both multi-locks were acquired (the writer once the reader released)');
  });

  it('takes members by name, then the write side before the read side, whatever order they were given in', async () => {
    const name = uniqueName('order');
    const started: string[] = [];
    const handlers = {
      start: (context: unknown) => {
        const { name: traced, kind } = context as AcquireTraceContext;
        if (kind !== 'multi-lock' && traced.startsWith(name)) started.push(`${kind} ${traced.slice(name.length)}`);
      },
      end: () => undefined,
      asyncStart: () => undefined,
      asyncEnd: () => undefined,
      error: () => undefined,
    };
    const c = s.client;
    tracingChannel('relock:acquire').subscribe(handlers);
    let lease: Lease | undefined;
    try {
      lease = await c
        .multiLock([c.lock(`${name}}:rw s`), c.fairLock(`${name}`), c.readWriteLock(`${name}:x`).writeLock(), c.readWriteLock(name).readLock(), c.lock(name), c.lock(`${name}!`)])
        .acquire({ waitMs: 5_000 });
    } finally {
      tracingChannel('relock:acquire').unsubscribe(handlers);
    }
    await lease.release();
    assert.equal(started, ['lock ', 'fair-lock ', 'read-lock ', 'lock !', 'write-lock :x', 'lock }:rw s']);
  });
});
