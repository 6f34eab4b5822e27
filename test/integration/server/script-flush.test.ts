// Scripts that disappear (issue 20, point 4): the script cache emptied before every single script
// call (SCRIPT FLUSH, as a restart or Redis 7.4+ evicting EVAL-loaded scripts would) costs a reload
// (EVAL after NOSCRIPT), never a failed operation, for every kind: first acquisitions, re-entries,
// renewals, waits woken by a release, releases, reads, and the latch.
import * as assert from 'uvu/assert';
import type { Redis } from 'ioredis';
import { LockClient } from '../../../src/index.ts';
import { describe, uniqueName } from '../../helpers/describe.ts';
import { commandStats, setup, sleep } from '../../helpers/fixture.ts';

describe('scripts that disappear: SCRIPT FLUSH before every script call', (it) => {
  const s = setup(it);
  let client: LockClient;
  let flushes = 0;

  /** The user's connection, with the script cache emptied (on another connection) before each EVALSHA it sends. */
  function flushing(redis: Redis, admin: Redis): Redis {
    return new Proxy(redis, {
      get(target, property) {
        const value = Reflect.get(target, property, target) as unknown;
        if (property === 'evalsha') {
          return async (...args: unknown[]) => {
            await admin.script('FLUSH');
            flushes++;
            return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          };
        }
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  it.before(() => {
    const redis = s.f.server.connect();
    // A short lease: renewals run (and find their script gone) every 200 ms.
    client = new LockClient({ redis: flushing(redis, s.f.server.connect()), leaseMs: 600 });
  });
  it.after(() => client.close());

  it('costs a reload, never a failed operation, for every kind', async () => {
    const before = await commandStats(s.f.admin);
    const name = uniqueName('flush');
    const lock = client.lock(name);
    const lease = await lock.acquire();
    const nested = await lease.run(() => lock.acquire());
    assert.is(nested.holdCount, 2);
    assert.ok(await lock.isLocked());
    await sleep(700); // renewals past the lease
    assert.not.ok(lease.signal.aborted, 'renewed through the reloads');
    // A waiter of another client, woken by the release.
    const waiting = s.other.lock(name).acquire({ waitMs: 5_000 });
    await nested.release();
    await lease.release();
    await (await waiting).release();

    const fair = await client.fairLock(name).acquire();
    await fair.release();
    const rw = client.readWriteLock(name);
    const read = await rw.readLock().acquire();
    const again = await read.run(() => rw.readLock().acquire());
    await again.release();
    await read.release();
    const written = await rw.writeLock().acquire();
    await written.release();
    const semaphore = client.semaphore(name, { permits: 2 });
    const permits = await semaphore.acquire({ permits: 2 });
    assert.is(await semaphore.availablePermits(), 0);
    await permits.release();
    const both = await client.multiLock([client.lock(`${name}:a`), client.lock(`${name}:b`)]).acquire();
    await both.release();
    const latch = client.countDownLatch(name);
    assert.ok(await latch.trySetCount(2));
    const opened = latch.wait({ waitMs: 5_000 });
    await latch.countDown();
    await latch.countDown();
    await opened;

    const after = await commandStats(s.f.admin);
    assert.ok(flushes >= 20, `${flushes} flushes`);
    assert.ok((after.eval ?? 0) - (before.eval ?? 0) >= flushes, 'every EVALSHA after a flush was reloaded by EVAL');
  });
});
