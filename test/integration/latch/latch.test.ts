// The count-down latch beyond its contract: a count-down that the connection sends twice (ioredis
// resends a command whose connection closed before its reply came) counts once; the record of
// count-downs lives and dies with the latch; a Redlock client refuses a latch.
import * as assert from 'uvu/assert';
import { LockError } from '../../../src/index.ts';
import * as lua from '../../../src/generated/latch.ts';
import { latchKeys } from '../../../src/latch/keys.ts';
import { describe, uniqueName } from '../../helpers/describe.ts';
import { setup } from '../../helpers/fixture.ts';
import { startMasters } from '../redlock/masters.ts';

describe('count-down latch: a count-down sent twice, the record of count-downs', (it) => {
  const s = setup(it);
  /** Runs the count-down script as the client sends it, with `id`. */
  const countDown = (name: string, id: string) => {
    const keys = latchKeys('relock', name);
    return s.f.admin.eval(lua.countDown.source, 3, keys.latch, keys.done, keys.channel, id, 'publish', 'open') as Promise<number>;
  };

  it('counts a count-down whose script runs twice (a resend) once', async () => {
    const latch = s.client.countDownLatch(uniqueName('latch'));
    await latch.trySetCount(3);
    // Counts above 0 come as digits (lua/latch/count-down-3.lua's header).
    assert.is(await countDown(latch.name, 'a'), '2');
    assert.is(await countDown(latch.name, 'a'), '2', 'the resend answers the count and changes nothing');
    assert.is(await latch.count(), 2);
    assert.is(await countDown(latch.name, 'b'), '1');
    assert.is(await countDown(latch.name, 'c'), 0);
    assert.is(await countDown(latch.name, 'c'), 0, 'a resend after 0 finds the latch open');
    assert.is(await s.f.admin.exists(latchKeys('relock', latch.name).done), 0, 'the record went with the latch');
  });

  it('gives the record of count-downs the latch time to live, and a new count a fresh record', async () => {
    const latch = s.client.countDownLatch(uniqueName('latch'));
    const keys = latchKeys('relock', latch.name);
    await latch.trySetCount(3, { ttlMs: 60_000 });
    await latch.countDown();
    const [latchTtl, doneTtl] = [await s.f.admin.pttl(keys.latch), await s.f.admin.pttl(keys.done)];
    // The script gives the record the latch's PTTL. Redis 7.0 and older read the clock anew for each
    // command, so the record's PEXPIRE counts from a little later than the latch's PTTL was read: it
    // may outlive the latch by the script's own run time (1 ms seen on a busy machine), never by more.
    assert.ok(doneTtl > 0 && doneTtl <= latchTtl + 20, `record PTTL ${doneTtl} ms, latch ${latchTtl} ms`);
    assert.ok(doneTtl > 50_000, `the record lives as long as the latch, not shorter (${doneTtl} ms)`);
    // A latch that expired while its record lived on (a record without expiry is left by hand here).
    await s.f.admin.del(keys.latch);
    await s.f.admin.persist(keys.done);
    assert.ok(await latch.trySetCount(2));
    assert.is(await s.f.admin.exists(keys.done), 0, 'the old record is not the new count\'s');
    assert.is(await latch.countDown(), 1);
  });
});

describe('count-down latch on a Redlock client', (it) => {
  let masters: Awaited<ReturnType<typeof startMasters>>;
  it.before(async () => {
    masters = await startMasters(3);
  });
  it.after(() => masters.close());

  it('is refused with ERR_LOCK_UNSUPPORTED when it is made, before any I/O', () => {
    const client = masters.client();
    try {
      client.countDownLatch('x');
      assert.unreachable('a Redlock client made a latch');
    } catch (error) {
      assert.instance(error, LockError);
      assert.is((error as LockError).code, 'ERR_LOCK_UNSUPPORTED');
      assert.match((error as LockError).message, 'Redlock');
    }
    assert.throws(() => client.countDownLatch(''), RangeError);
  });
});
