// The fair lock's fencing tokens follow the one fence rule of lua/shared/fence.lua.inc, on every path
// that grants: the fence key lives at least as long as the hold its token went to (a late grant's
// confirm finds its token with fenceTtlMs below the lease), and a token past the safe integers is
// refused before anything is written (ERR_LOCK_FENCE_OVERFLOW), as for lock().
import * as assert from 'uvu/assert';
import * as lua from '../../../src/generated/fair-lock.ts';
import { describe, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { setup } from '../../helpers/fixture.ts';
import { startProxy } from '../../helpers/proxy.ts';
import { fairKeys, queued } from './support.ts';

const C = 500;
const MIN_CLAIM_LEFT = 100;

describe('LockClient#fairLock fencing tokens', (it) => {
  const s = setup(it);

  it('holds a grant confirmed late with fenceTtlMs below the lease, and keeps the fence for the lease', async () => {
    const name = uniqueName('fair');
    const keys = fairKeys(name);
    const proxy = await startProxy({ host: s.f.server.host, port: s.f.server.port });
    try {
      const releaser = s.f.client({ fenceTtlMs: 1 });
      const late = s.f.client({ redis: { ...proxy.options }, fenceTtlMs: 1, leaseMs: 20_000 });
      late.on('error', () => undefined);
      const held = await releaser.fairLock(name).acquire();
      const waiting = late.fairLock(name).acquire({ waitMs: 8_000 });
      await queued(s.f.admin, name, 1);
      // Everything Redis sends the late client now arrives with less than the minimum claim left:
      // its grant is owned only through the confirm script.
      proxy.delay(0, C - MIN_CLAIM_LEFT + 30);
      await held.release();
      const lease = await within(waiting, 8_000, 'the grantee that saw its grant late');
      assert.ok(lease.fencingToken > held.fencingToken, `token ${lease.fencingToken} after ${held.fencingToken}`);
      assert.is(await s.f.admin.hlen(keys.lock), 1, 'one holder');
      const fenceTtl = await s.f.admin.pttl(keys.fence);
      assert.ok(fenceTtl > 10_000, `the fence lives ${fenceTtl} ms: at least the holder's 20 s lease from its confirm or take`);
      assert.is(Number(await s.f.admin.get(keys.fence)), lease.fencingToken);
      proxy.pass();
      await lease.release();
    } finally {
      await proxy.close();
    }
  });

  it('refuses a token past the safe integers with ERR_LOCK_FENCE_OVERFLOW, and takes nothing', async () => {
    const name = uniqueName('fair');
    const keys = fairKeys(name);
    await s.f.admin.set(keys.fence, '9007199254740991', 'PX', 60_000);
    const error = await rejects(s.client.fairLock(name).acquire({ waitMs: 0 }));
    assert.is(error.code, 'ERR_LOCK_FENCE_OVERFLOW');
    assert.match(error.message, /nothing was changed/);
    assert.equal(await s.f.admin.hgetall(keys.lock), {}, 'no hold taken');
    assert.is(await s.f.admin.get(keys.fence), '9007199254740991', 'the fence left as it was');
  });

  it('grants nobody a token past the safe integers on release: the fence and the queue stay', async () => {
    const name = uniqueName('fair');
    const keys = fairKeys(name);
    await s.f.admin.set(keys.fence, '9007199254740990', 'PX', 60_000);
    const held = await s.client.fairLock(name).acquire();
    assert.is(held.fencingToken, Number.MAX_SAFE_INTEGER);
    const controller = new AbortController();
    const waiting = s.other.fairLock(name).acquire({ signal: controller.signal }).catch((error: Error) => error);
    await queued(s.f.admin, name, 1);
    await held.release();
    assert.equal(await s.f.admin.hgetall(keys.lock), {}, 'released, and granted to nobody');
    assert.is(await s.f.admin.get(keys.fence), '9007199254740991', 'no token beyond 2^53 - 1 issued');
    const joined = await rejects(s.client.fairLock(name).acquire({ waitMs: 0 }));
    assert.is(joined.code, 'ERR_LOCK_FENCE_OVERFLOW', 'the next acquire reports it');
    controller.abort();
    assert.instance(await waiting, Error);
  });

  it('refuses forceUnlock() with waiters when the next token would leave the safe integers, and deletes nothing', async () => {
    const name = uniqueName('fair');
    const keys = fairKeys(name);
    await s.f.admin.set(keys.fence, '9007199254740990', 'PX', 60_000);
    const held = await s.client.fairLock(name).acquire();
    const controller = new AbortController();
    const waiting = s.other.fairLock(name).acquire({ signal: controller.signal }).catch((error: Error) => error);
    await queued(s.f.admin, name, 1);
    const error = await rejects(s.other.fairLock(name).forceUnlock());
    assert.is(error.code, 'ERR_LOCK_FENCE_OVERFLOW');
    assert.is(await s.f.admin.hlen(keys.lock), 1, 'the holder still holds');
    assert.is(await s.f.admin.llen(keys.queue), 1, 'the waiter still queued');
    controller.abort();
    assert.instance(await waiting, Error);
    await held.release();
  });

  it('confirms nothing when the fence key is gone: the hold is not lengthened (confirm-2 answers 0)', async () => {
    const name = uniqueName('fair');
    const keys = fairKeys(name);
    await s.f.admin.hset(keys.lock, 'someone:1', '1');
    await s.f.admin.pexpire(keys.lock, 5_000);
    assert.is(await s.f.admin.eval(lua.confirm.source, 2, keys.lock, keys.fence, 'someone:1', 60_000), 0);
    assert.ok((await s.f.admin.pttl(keys.lock)) <= 5_000, 'not lengthened');
    await s.f.admin.set(keys.fence, '42', 'PX', 10);
    assert.is(await s.f.admin.eval(lua.confirm.source, 2, keys.lock, keys.fence, 'someone:1', 60_000), '42');
    assert.ok((await s.f.admin.pttl(keys.lock)) > 5_000 && (await s.f.admin.pttl(keys.fence)) > 5_000, 'both live the lease now');
    assert.is(await s.f.admin.eval(lua.confirm.source, 2, keys.lock, keys.fence, 'nobody:1', 60_000), 0);
    await s.f.admin.del(keys.lock, keys.fence);
  });
});
