// A managed-service profile (issue 20, point 2): a server with CONFIG, CLIENT, DEBUG and MONITOR
// renamed away, used through the least-privilege ACL user of test/helpers/acl.ts (every command of
// relock's scripts, its keys and channels, nothing else: no INFO, no CONFIG, no CLIENT). Every kind
// works; the eviction-policy check degrades silently; and `replicas` on a server without WAIT
// fails at the first acquire with ERR_LOCK_UNSUPPORTED, the lock given back, never a hang.
import * as assert from 'uvu/assert';
import { LockError } from '../../../src/index.ts';
import { createRelockUser, type AclUser } from '../../helpers/acl.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { setup } from '../../helpers/fixture.ts';

const RENAMED = ['CONFIG', 'CLIENT', 'DEBUG', 'MONITOR', 'WAIT'];

describe('a managed-service profile: admin commands renamed away, a least-privilege ACL user', (it) => {
  const s = setup(it, {}, {}, { private: true, args: RENAMED.flatMap((command) => ['--rename-command', command, '']) });
  let user: AclUser;
  it.before(async () => {
    user = await createRelockUser(s.f.admin, 'app');
  });
  /** A client of the least-privilege user (closed with the suite's fixture). */
  const client = async (options: { replicas?: number } = {}) => s.f.client({ redis: { host: s.f.server.host, port: s.f.server.port, ...user.options }, ...options });

  it('runs every kind, with no warning and no error event', async () => {
    const [a, b] = [await client(), await client()];
    const events: string[] = [];
    for (const c of [a, b]) {
      c.on('warning', (warning) => events.push(`warning ${warning.code}`));
      c.on('error', (error) => events.push(`error ${error.message}`));
    }
    const name = uniqueName('managed');
    const lease = await a.lock(name).acquire();
    const nested = await lease.run(() => a.lock(name).acquire());
    const waiting = b.lock(name).acquire({ waitMs: 5_000 });
    await nested.release();
    await lease.release();
    await (await within(waiting, 5_000, 'woken by the release')).release();
    await (await a.fairLock(name).acquire()).release();
    const read = await a.readWriteLock(name).readLock().acquire();
    const write = b.readWriteLock(name).writeLock().acquire({ waitMs: 5_000 });
    await read.release();
    await (await write).release();
    const permits = await a.semaphore(name, { permits: 2 }).acquire({ permits: 2 });
    await permits.release();
    await (await a.multiLock([a.lock(`${name}:1`), a.lock(`${name}:2`)]).acquire()).release();
    const latch = a.countDownLatch(name);
    await latch.trySetCount(1);
    const opened = b.countDownLatch(name).wait({ waitMs: 5_000 });
    await latch.countDown();
    await opened;
    assert.ok(await a.lock(name).forceUnlock() === false);
    assert.equal(events, [], 'nothing reported: the eviction check is skipped without CONFIG');
  });

  it('refuses `replicas` without WAIT at the first acquire, ERR_LOCK_UNSUPPORTED, and gives the lock back', async () => {
    const a = await client({ replicas: 1 });
    const name = uniqueName('managed');
    const error = await within(rejects(a.lock(name).acquire()), 5_000, 'the acquire settles');
    assert.instance(error, LockError);
    assert.is(error.code, 'ERR_LOCK_UNSUPPORTED');
    assert.match(error.message, /WAIT/);
    await eventually(async () => !(await a.lock(name).isLocked()), 'the lock given back');
  });
});
