// relock/node-cron's runCoordinator in one process, call by call as node-cron makes them: the first
// shouldRun of a fire holds its lock, the others get false; onComplete keeps the window; a fire's
// lock is its own; options are checked when it is made; an unnamed task's keys are refused.
import * as assert from 'uvu/assert';
import { LockError } from '../../../src/index.ts';
import { runCoordinator } from '../../../src/node-cron/index.ts';
import { describe, uniqueName } from '../../helpers/describe.ts';
import { setup } from '../../helpers/fixture.ts';

describe('relock/node-cron: runCoordinator', (it) => {
  const s = setup(it);

  it('lets one process run each fire, keeps its lock atLeastMs after the start, and gives each fire its own lock', async () => {
    const [mine, theirs] = [runCoordinator(s.client, { atLeastMs: 5_000 }), runCoordinator(s.other, { atLeastMs: 5_000 })];
    const task = uniqueName('task');
    const fire = `${task}:2026-12-07T03:00:00.000Z`;
    assert.is(await mine.shouldRun(fire, 30_000), true);
    assert.is(await theirs.shouldRun(fire, 30_000), false, 'held by the run under way');
    assert.equal(await s.f.admin.hgetall(`relock:{node-cron:${fire}}`).then((hash) => Object.values(hash)), ['1'], 'the run holds the lock');
    await mine.onComplete(fire);
    const pttl = await s.f.admin.pttl(`relock:{node-cron:${fire}}`);
    assert.ok(pttl > 3_000 && pttl <= 5_000, `the window stays (${pttl} ms)`);
    assert.is(await theirs.shouldRun(fire, 30_000), false, 'the window');
    await theirs.onComplete(fire); // node-cron calls it only after a run; harmless otherwise
    const next = `${task}:2026-12-07T03:00:01.000Z`;
    assert.is(await theirs.shouldRun(next, 30_000), true, 'the next fire has a lock of its own');
    await theirs.onComplete(next);
  });

  it("defaults atLeastMs to node-cron's ttlMs, capped by atMostMs", async () => {
    const fire = `${uniqueName('task')}:2026-12-07T03:00:00.000Z`;
    const coordinator = runCoordinator(s.client, { atMostMs: 2_000 });
    assert.is(await coordinator.shouldRun(fire, 30_000), true, 'a ttlMs above atMostMs is not refused');
    await coordinator.onComplete(fire);
    const pttl = await s.f.admin.pttl(`relock:{node-cron:${fire}}`);
    assert.ok(pttl > 0 && pttl <= 2_000, `kept atMostMs at most (${pttl} ms)`);
  });

  it('refuses bad options and clients when made, and the keys of an unnamed task', async () => {
    assert.throws(() => runCoordinator({} as never), TypeError);
    assert.throws(() => runCoordinator(s.client, { atLeastMs: 10_000, atMostMs: 1_000 }), RangeError);
    assert.throws(() => runCoordinator(s.client, { prefix: 5 as never }), TypeError);
    const coordinator = runCoordinator(s.client);
    try {
      await coordinator.shouldRun('0b5c2a36-8f1e-4c59-9d1a-5ad0c8e7f2a1:2026-12-07T03:00:00.000Z', 30_000);
      assert.unreachable('an unnamed task ran');
    } catch (error) {
      assert.instance(error, TypeError);
      assert.match((error as Error).message, 'no name');
    }
  });

  it('is refused on a client without jobs (the Redisson layout), when made', () => {
    const redisson = s.f.client({ layout: 'redisson' });
    assert.throws(() => runCoordinator(redisson), (error: Error) => error instanceof LockError && error.code === 'ERR_LOCK_UNSUPPORTED');
  });
});
