// A wait that ends (waitMs, abort) while its attempt is still out: the refusal that attempt brings
// lands after the wait gave up, and `leave` must still take it out of the lock's bookkeeping, so that
// neither a writer's intent nor a reader's registration outlives the wait.
import * as assert from 'uvu/assert';
import type { LockClient } from '../../../src/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { setup } from '../../helpers/fixture.ts';
import { startProxy, type Proxy } from '../../helpers/proxy.ts';

const keysOf = (name: string) => {
  const rw = `relock:{${name}}:rw`;
  return { intents: `${rw}:intents`, waiting: `${rw}:waiting`, batch: `${rw}:batch` };
};

/** Ends the wait by its waitMs, or by aborting it once its attempt has reached Redis. */
const ENDS = ['waitMs', 'abort'] as const;

describe('ReadWriteLock: a wait that ends while its attempt is out', (it) => {
  const s = setup(it);
  let proxy: Proxy;
  /** A client whose replies come 100 ms late: a wait ends while its attempt's reply is on the way. */
  let slow: LockClient;
  it.before(async () => {
    proxy = await startProxy(s.f.server);
    slow = s.f.client({ redis: { ...proxy.options } });
    slow.on('error', () => undefined);
  });
  it.after(() => proxy?.close());

  /** Starts a wait of `side` on the slow link, sees its attempt land (`landed`), and ends it. */
  async function endWhileOut(name: string, side: 'readLock' | 'writeLock', end: (typeof ENDS)[number], landed: () => Promise<boolean>): Promise<void> {
    // The scripts loaded and the connection up before the link slows down: the attempt is one EVALSHA.
    proxy.pass();
    const warm = await slow.readWriteLock(name)[side]().tryAcquire();
    assert.is(warm, null);
    await eventually(async () => (await s.f.admin.zcard(keysOf(name).intents)) + (await s.f.admin.zcard(keysOf(name).waiting)) === 0, 'the try-once left');
    proxy.delay(0, 100);
    const controller = new AbortController();
    const waiting = rejects(slow.readWriteLock(name)[side]().acquire(end === 'waitMs' ? { waitMs: 30 } : { signal: controller.signal }));
    await eventually(landed, 'the attempt landed in Redis', 2_000);
    controller.abort(new Error('given up'));
    const error = await within(waiting, 2_000, 'the ended wait');
    assert.is(error.name, end === 'waitMs' ? 'LockTimeoutError' : 'Error');
    proxy.pass();
  }

  it("drops a writer's intent when its wait ends while the attempt that set it is out: new readers get in at once", async () => {
    for (const end of ENDS) {
      const name = uniqueName('rw');
      const { intents } = keysOf(name);
      const reader = await s.client.readWriteLock(name).readLock().acquire();
      await endWhileOut(name, 'writeLock', end, async () => (await s.f.admin.zcard(intents)) === 1);
      assert.equal(await s.f.admin.zrange(intents, '0', '-1'), [], `${end}: no intent left once the wait rejected`);
      const next = await s.other.readWriteLock(name).readLock().acquire({ waitMs: 0 });
      await next.release();
      await reader.release();
    }
  });

  it('takes a reader whose wait ends while its attempt is out off the waiting readers: the next read batch does not count it', async () => {
    for (const end of ENDS) {
      const name = uniqueName('rw');
      const { waiting, batch } = keysOf(name);
      const writer = await s.client.readWriteLock(name).writeLock().acquire();
      await endWhileOut(name, 'readLock', end, async () => (await s.f.admin.zcard(waiting)) === 1);
      assert.equal(await s.f.admin.zrange(waiting, '0', '-1'), [], `${end}: no registration left once the wait rejected`);
      await writer.release();
      assert.is(await s.f.admin.exists(batch), 0, `${end}: no read batch opened for a reader that is gone`);
      // No batch keeps writers out: the next writer gets in at once.
      const next = await s.other.readWriteLock(name).writeLock().acquire({ waitMs: 0 });
      await next.release();
    }
  });
});
