import * as assert from 'uvu/assert';
import type { LockClient } from '../../../src/index.ts';
import { describe, eventually, uniqueName, within } from '../../helpers/describe.ts';
import { setup, sleep } from '../../helpers/fixture.ts';

describe('ReadWriteLock: neither side starves', (it) => {
  const s = setup(it);

  /** Loops taking `side` on the name until stopped; resolves to how many holds it had. */
  const stream = (clients: LockClient[], name: string, side: 'read' | 'write', holdMs: number, stop: AbortSignal) =>
    clients.map(async (client, i) => {
      await sleep(i * 7); // staggered, so that the holds overlap and the lock is never free
      const rw = client.readWriteLock(name);
      let holds = 0;
      while (!stop.aborted) {
        await (side === 'read' ? rw.readLock() : rw.writeLock()).runExclusive(() => sleep(holdMs));
        holds++;
      }
      return holds;
    });

  /**
   * Readers that never leave the lock free on their own: each takes its next read hold before it lets
   * the current one go (and lets it go anyway when the next one is refused for 50 ms).
   */
  const relay = (client: LockClient, name: string, stop: AbortSignal) => async () => {
    const read = client.readWriteLock(name).readLock();
    let current = await read.acquire();
    let holds = 1;
    while (!stop.aborted) {
      await sleep(10);
      const next = await read.acquire({ waitMs: 50 }).catch(() => undefined);
      await current.release();
      current = next ?? (await read.acquire());
      holds++;
    }
    await current.release();
    return holds;
  };

  it('lets a writer in within a bound while readers keep the lock read-locked without a gap', async () => {
    const name = uniqueName('rw');
    const stop = new AbortController();
    const readers = [relay(s.client, name, stop.signal)(), relay(s.other, name, stop.signal)()];
    let waited: number;
    try {
      await sleep(200);
      const started = performance.now();
      // Without a writer preference the relay would keep it read-locked for ever: this would time out.
      const lease = await s.other.readWriteLock(name).writeLock().acquire({ waitMs: 3_000 });
      waited = performance.now() - started;
      await lease.release();
      await sleep(100);
    } finally {
      stop.abort();
      await Promise.allSettled(readers);
    }
    const holds = await Promise.all(readers);
    assert.ok(waited < 2_000, `the writer waited ${waited} ms`);
    assert.ok(holds.every((n) => n > 3), `the readers went on: ${holds}`);
  });

  it('lets a reader in within a bound while two writers take turns without a pause', async () => {
    const name = uniqueName('rw');
    const stop = new AbortController();
    const writers = stream([s.client, s.other], name, 'write', 10, stop.signal);
    await sleep(100);
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      const lease = await within(s.other.readWriteLock(name).readLock().acquire({ waitMs: 3_000 }), 4_000, 'the reader');
      assert.ok(performance.now() - started < 1_000, `the reader waited ${performance.now() - started} ms`);
      await lease.release();
    }
    stop.abort();
    assert.ok((await Promise.all(writers)).every((n) => n > 0));
  });

  it('keeps new readers out while a writer waits for the readers, and lets them in as soon as that writer gives up', async () => {
    const name = uniqueName('rw');
    const reader = await s.other.readWriteLock(name).readLock().acquire();
    const rw = s.client.readWriteLock(name);
    const gaveUp = rw.writeLock().acquire({ waitMs: 400 }).catch((error: Error) => error);
    await eventually(() => s.client.waiting === 1, 'the writer waits');
    await sleep(50); // its intent is set
    assert.is(await rw.readLock().tryAcquire(), null, 'a new reader waits behind the waiting writer');
    assert.ok(await reader.run(() => s.other.readWriteLock(name).readLock().acquire({ waitMs: 0 })), 'a holding context still re-enters');
    assert.is((await gaveUp)?.name, 'LockTimeoutError');
    // The writer's intent was dropped when it gave up (not left to expire), so a reader gets in at once.
    const lease = await rw.readLock().acquire({ waitMs: 0 });
    await lease.release();
    await reader.release();
  });
});
