// RedissonFairLock's known failures (redisson/redisson RedissonFairLock.java), each as a test that
// the fair lock does not repeat it. See docs/fair-lock.md, "Against RedissonFairLock's failures".
import * as assert from 'uvu/assert';
import { LockClient, LockError, type Lease } from '../../../src/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { startPrivateRedis } from '../../helpers/redis.ts';
import { setup, sleep } from '../../helpers/fixture.ts';
import { childProcesses } from './processes.ts';
import { fairKeys, grantChannel, keysLeft, queued, redisNowMs, reportStall, sharedNow, unheard } from './support.ts';

const H = 200;
const D = 1_000;

describe('LockClient#fairLock against RedissonFairLock regressions', (it) => {
  const s = setup(it);
  let third: LockClient;
  const { start: child } = childProcesses(it, () => s.f.server.url);
  it.before(() => {
    third = s.f.client();
  });

  /** Waiters of the given clients, queued one after the other; resolves with them in queue order. */
  const queue = async (name: string, clients: LockClient[]): Promise<Promise<Lease>[]> => {
    const waits: Promise<Lease>[] = [];
    const base = await s.f.admin.llen(fairKeys(name).queue);
    for (const client of clients) {
      waits.push(client.fairLock(name).acquire());
      await queued(s.f.admin, name, base + waits.length);
    }
    return waits;
  };

  it('keeps live waiters queued, in order, while they wait well past the deadline D (#3004)', async () => {
    const name = uniqueName('fair');
    const held = await s.client.fairLock(name).acquire();
    const waits = await queue(name, [s.other, third, s.other]);
    const entries = await s.f.admin.lrange(fairKeys(name).queue, 0, -1);
    await sleep(2.5 * D);
    assert.equal(await s.f.admin.lrange(fairKeys(name).queue, 0, -1), entries, 'nobody pruned or moved');
    await held.release();
    const order: number[] = [];
    for (const [i, wait] of waits.entries()) {
      const lease = await within(wait, 1_000, `waiter ${i}`);
      order.push(i);
      await lease.release();
    }
    assert.equal(order, [0, 1, 2]);
  });

  it('is not stuck when the holder key expired: the next heartbeat grants it (#3730)', async () => {
    const name = uniqueName('fair');
    const startedAt = performance.now();
    const expiring = await s.client.fairLock(name).acquire({ leaseMs: 300 });
    const [first, second] = await queue(name, [s.other, third]);
    const lease = await within(first!, 2_000, 'the head after the holder expired');
    const waited = performance.now() - startedAt;
    reportStall('holder key expired (lease 300 ms): from its acquire', waited);
    assert.ok(waited < 300 + H + 150, `acquired ${waited} ms after a 300 ms lease began`);
    assert.ok(lease.fencingToken > expiring.fencingToken);
    await lease.release();
    await (await within(second!, 1_000, 'the second waiter')).release();
  });

  it('is not stuck behind the dead entries of waiter processes that all restarted (#6150, #4595, #4661)', async () => {
    const name = uniqueName('fair');
    const held = await s.client.fairLock(name).acquire();
    // The processes that replace the dead ones are started first: starting a process can take
    // seconds on a loaded machine, longer than the queue keeps the entries of clients that stopped
    // heartbeating (2 D), and then there would be no dead entries left to queue behind.
    const [old0, old1, first, second] = await Promise.all([child(name), child(name), child(name), child(name)]);
    const before = [old0, old1];
    for (const [i, old] of before.entries()) for (const id of ['a', 'b', 'c']) old.acquire(`${i}${id}`);
    await queued(s.f.admin, name, 6);
    for (const old of before) {
      await old.kill();
      await unheard(s.f.admin, grantChannel(name, old.clientId));
    }
    // The restarted processes queue behind six dead entries.
    first.acquire('x', { holdMs: 10 });
    await queued(s.f.admin, name, 7);
    second.acquire('y', { holdMs: 10 });
    await queued(s.f.admin, name, 8);
    const releasedAt = sharedNow();
    await held.release();
    const x = await within(first.next('acquired', 'x'), 2_000, 'the first restarted waiter');
    const stall = x.at - releasedAt;
    reportStall('6 dead entries after a restart of every waiter process', stall);
    assert.ok(stall < 100, `the restarted waiter waited ${stall} ms behind dead entries`);
    const y = await within(second.next('acquired', 'y'), 2_000, 'the second restarted waiter');
    assert.ok(y.token > x.token);
    await within(second.next('released', 'y'), 2_000, 'y released');
    assert.equal(await keysLeft(s.f.admin, name), []);
  });

  it('keeps every deadline at Redis TIME + D, absolute, through heartbeats and leaving neighbours (#1104, #2099, PR #7223)', async () => {
    const name = uniqueName('fair');
    const held = await s.client.fairLock(name).acquire();
    const controller = new AbortController();
    const leaving = s.other.fairLock(name).acquire({ signal: controller.signal }).catch((error: Error) => error);
    await queued(s.f.admin, name, 1);
    const waits = await queue(name, [third, s.other, third]);
    const keys = fairKeys(name);
    for (let sample = 0; sample < 15; sample++) {
      if (sample === 5) controller.abort();
      const scores = await s.f.admin.zrange(keys.deadlines, '0', '-1', 'WITHSCORES');
      const now = await redisNowMs(s.f.admin);
      for (let i = 1; i < scores.length; i += 2) {
        const ahead = Number(scores[i]) - now;
        // Written as TIME + D by the join or the last heartbeat (at most H ago, plus scheduling).
        assert.ok(ahead <= D && ahead >= D - H - 150, `a deadline ${ahead} ms ahead of Redis TIME`);
      }
      await sleep(100);
    }
    assert.instance(await leaving, Error);
    await held.release();
    for (const [i, wait] of waits.entries()) await (await within(wait, 1_000, `waiter ${i}`)).release();
  });

  it('re-queues a live waiter whose entry vanished, instead of leaving it blocked (#5503)', async () => {
    const name = uniqueName('fair');
    const held = await s.client.fairLock(name).acquire();
    const [waiting] = await queue(name, [s.other]);
    const keys = fairKeys(name);
    const [owner] = await s.f.admin.lrange(keys.queue, 0, -1);
    await s.f.admin.lrem(keys.queue, 0, owner!);
    await s.f.admin.zrem(keys.deadlines, owner!);
    await eventually(async () => (await s.f.admin.lrange(keys.queue, 0, -1)).includes(owner!), 'its heartbeat queues it again', H + 300);
    await held.release();
    await (await within(waiting!, 1_000, 'the re-queued waiter')).release();
  });
});

/** A LockClient whose private Redis answered once (the client connected) and is now killed. */
async function wentDown(): Promise<{ client: LockClient; restart(): Promise<void>; close(): Promise<void> }> {
  const server = await startPrivateRedis();
  const client = new LockClient({ redis: server.url });
  client.on('error', () => undefined);
  await (await client.lock(uniqueName('warm')).acquire()).release();
  await server.kill();
  return {
    client,
    restart: () => server.restart(),
    async close() {
      await client.close();
      await server.stop();
    },
  };
}

describe('LockClient#fairLock on an unreachable Redis', (it) => {
  // A finite wait rides out a connection failure until it ends, from its first try on (the try of a
  // client not yet listening, and its subscription, failed the whole wait at once before: seen over
  // GLIDE in a failover).
  it('a finite wait rides out Redis down at its first try, and takes the lock once Redis is back', async () => {
    const down = await wentDown();
    try {
      const waiting = down.client.fairLock(uniqueName('fair')).acquire({ waitMs: 10_000 });
      const settled = waiting.then(
        () => 'acquired',
        (error: unknown) => error,
      );
      await sleep(700);
      assert.is(await Promise.race([settled, sleep(0).then(() => 'waiting')]), 'waiting', 'still waiting while Redis is down');
      await down.restart();
      const lease = await within(waiting, 8_000, 'the fair lock once Redis is back');
      assert.ok(lease.fencingToken > 0);
      await lease.release();
    } finally {
      await down.close();
    }
  });

  it('a wait without an end still fails fast with ERR_LOCK_UNREACHABLE', async () => {
    const down = await wentDown();
    try {
      const error = (await within(rejects(down.client.fairLock(uniqueName('fair')).acquire()), 5_000, 'the failure')) as LockError;
      assert.instance(error, LockError);
      assert.is(error.code, 'ERR_LOCK_UNREACHABLE');
    } finally {
      await down.close();
    }
  });
});
