import * as assert from 'uvu/assert';
import { describe, eventually, uniqueName, within } from '../../helpers/describe.ts';
import { setup, sleep } from '../../helpers/fixture.ts';

describe('ReadWriteLock: each reader hold has its own lease', (it) => {
  const s = setup(it);

  it('frees a crashed reader part when its lease ends, while another reader keeps holding and renewing', async () => {
    const name = uniqueName('rw');
    const crashed = s.f.client({ leaseMs: 300 });
    await crashed.readWriteLock(name).readLock().acquire({ leaseMs: 600 });
    await crashed.close(); // never released
    const live = s.f.client({ leaseMs: 300 }); // renewed every 100 ms, for longer than the crashed lease
    const reader = await live.readWriteLock(name).readLock().acquire();
    let written = false;
    const waiting = s.client
      .readWriteLock(name)
      .writeLock()
      .acquire()
      .then((lease) => ((written = true), lease));
    await sleep(1_000); // the crashed lease has ended; the live reader renewed its own several times
    assert.not.ok(written, 'the live reader still holds');
    assert.ok(await s.client.readWriteLock(name).readLock().isLocked());
    const releasedAt = performance.now();
    await reader.release();
    const lease = await within(waiting, 1_000, 'the writer once the live reader left');
    // With one lease for every reader (renewed by any of them), the crashed part would still be alive here.
    assert.ok(performance.now() - releasedAt < 500, `the writer got in ${performance.now() - releasedAt} ms after the last live reader left`);
    await lease.release();
  });

  it('gives the lock to a waiting writer once the lease of a crashed lone reader ends', async () => {
    const name = uniqueName('rw');
    const crashed = s.f.client();
    await crashed.readWriteLock(name).readLock().acquire({ leaseMs: 500 });
    await crashed.close();
    const started = performance.now();
    const lease = await within(s.client.readWriteLock(name).writeLock().acquire(), 3_000, 'the writer after the crashed reader lease');
    assert.ok(performance.now() - started >= 300, 'not before the crashed reader lease ended');
    await lease.release();
  });

  it('renews a long reader and a downgraded read through the watchdog, each on its own', async () => {
    const fast = s.f.client({ leaseMs: 300 });
    const name = uniqueName('rw');
    const rw = fast.readWriteLock(name);
    const writer = await rw.writeLock().acquire();
    const read = await writer.run(() => rw.readLock().acquire());
    await writer.release();
    const other = await fast.readWriteLock(name).readLock().acquire();
    await sleep(1_000);
    assert.not.ok(read.signal.aborted, 'the downgraded read was renewed after the write release');
    assert.not.ok(other.signal.aborted);
    assert.is(await s.client.readWriteLock(name).writeLock().tryAcquire(), null);
    await read.release();
    await other.release();
    await eventually(async () => !(await rw.readLock().isLocked()), 'all read holds gone');
  });
});
