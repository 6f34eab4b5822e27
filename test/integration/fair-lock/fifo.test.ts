import * as assert from 'uvu/assert';
import type { Lease } from '../../../src/index.ts';
import { describe, eventually, uniqueName, within } from '../../helpers/describe.ts';
import { commandStats, setup, sleep } from '../../helpers/fixture.ts';
import { fairKeys, keysLeft, queued, reportStall } from './support.ts';

describe('LockClient#fairLock', (it) => {
  const s = setup(it);

  it('acquires a free lock with one script call, and frees it on release', async () => {
    const name = uniqueName('fair');
    const lock = s.client.fairLock(name);
    const before = await commandStats(s.f.admin);
    const lease = await lock.acquire();
    const after = await commandStats(s.f.admin);
    assert.is((after.evalsha ?? 0) - (before.evalsha ?? 0), 1);
    assert.is(lease.holdCount, 1);
    assert.ok(await lock.isLocked());
    const owners = await s.f.admin.hkeys(fairKeys(name).lock);
    assert.is(owners.length, 1);
    assert.ok(owners[0]!.startsWith(`${s.client.id}:`), owners[0]);
    await lease.release();
    assert.not.ok(await lock.isLocked());
    assert.equal(await keysLeft(s.f.admin, name), []);
  });

  it('serves acquires of one client started together in the order they started, in one join and one try', async () => {
    const name = uniqueName('fair');
    const held = await s.other.fairLock(name).acquire();
    const fresh = s.f.client();
    const before = await commandStats(s.f.admin);
    const order: number[] = [];
    // The first tries (the client is not listening yet); the others subscribe and join behind it.
    const waits = [0, 1, 2, 3].map((i) => fresh.fairLock(name).acquire({ waitMs: 5_000 }).then((lease) => (order.push(i), lease)));
    await queued(s.f.admin, name, 4);
    const after = await commandStats(s.f.admin);
    assert.is((after.evalsha ?? 0) - (before.evalsha ?? 0), 2, 'one try, then one join for all four');
    await held.release();
    for (const wait of waits) await (await within(wait, 2_000, 'a waiter')).release();
    assert.equal(order, [0, 1, 2, 3]);
  });

  it('serves waiters of four clients in the order they started waiting', async () => {
    const name = uniqueName('fair');
    const clients = [s.client, s.other, s.f.client(), s.f.client()];
    const held = await clients[0]!.fairLock(name).acquire();
    const order: number[] = [];
    const waits: Promise<Lease>[] = [];
    for (let i = 0; i < 8; i++) {
      const client = clients[(i * 3 + 1) % clients.length]!;
      waits.push(client.fairLock(name).acquire().then((lease) => (order.push(i), lease)));
      await queued(s.f.admin, name, i + 1);
    }
    await held.release();
    let token = held.fencingToken;
    for (let i = 0; i < 8; i++) {
      const lease = await within(waits[i]!, 3_000, `waiter ${i}`);
      assert.ok(lease.fencingToken > token, 'tokens increase from holder to holder');
      token = lease.fencingToken;
      await lease.release();
    }
    assert.equal(order, [0, 1, 2, 3, 4, 5, 6, 7]);
    assert.equal(await keysLeft(s.f.admin, name), []);
  });

  it('hands the lock over on release: the grantee sends no acquire of its own', async () => {
    const name = uniqueName('fair');
    const held = await s.other.fairLock(name).acquire();
    const waiting = s.client.fairLock(name).acquire();
    await queued(s.f.admin, name, 1);
    const monitor = await s.f.server.connect().monitor();
    const commands: string[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => commands.push(args.join(' ')));
    await sleep(20);
    const releasedAt = performance.now();
    await held.release();
    const lease = await within(waiting, 2_000, 'the grantee');
    const handOffMs = performance.now() - releasedAt;
    await sleep(20);
    monitor.disconnect();
    const scripts = commands.filter((line) => /^evalsha /i.test(line));
    // The release (which grants), then the grantee's confirm of its lease (renew-n, one key).
    const acquires = scripts.filter((line) => line.includes(' try') || line.includes(' wait'));
    assert.is(acquires.length, 0, `the grantee sent ${acquires.length} acquire scripts:\n${scripts.join('\n')}`);
    reportStall('hand-off, release() called -> the grantee holds (MONITOR on)', handOffMs);
    assert.ok(handOffMs < 100, `hand-off took ${handOffMs} ms`);
    assert.ok(lease.fencingToken > held.fencingToken);
    await lease.release();
  });

  it('tryAcquire never jumps a non-empty queue, and pumps a free lock to its head', async () => {
    const name = uniqueName('fair');
    const expiring = await s.other.fairLock(name).acquire({ leaseMs: 200 });
    const waiting = s.client.fairLock(name).acquire();
    await queued(s.f.admin, name, 1);
    assert.is(await s.f.client().fairLock(name).tryAcquire(), null, 'held');
    // The holder's key expires: nothing is published. A tryAcquire now finds the lock free with a
    // waiter queued: it grants the waiter (or the waiter's heartbeat did) and gets null.
    await eventually(async () => (await s.f.admin.exists(fairKeys(name).lock)) === 0 || (await s.f.admin.llen(fairKeys(name).queue)) === 0, 'the lease ends');
    assert.is(await s.f.client().fairLock(name).tryAcquire(), null, 'the queue goes first');
    const lease = await within(waiting, 1_000, 'the queued waiter');
    assert.ok(lease.fencingToken > expiring.fencingToken);
    await lease.release();
  });

  it('re-enters in the holder context without queueing, and frees only on the outermost release', async () => {
    const name = uniqueName('fair');
    const lock = s.client.fairLock(name);
    const waiting: Promise<Lease>[] = [];
    await lock.runExclusive(async (outer) => {
      waiting.push(s.other.fairLock(name).acquire());
      await queued(s.f.admin, name, 1);
      const inner = await within(lock.acquire(), 500, 'the nested acquire');
      assert.is(inner.holdCount, 2);
      assert.is(inner.fencingToken, outer.fencingToken);
      assert.is(await lock.holdCount(), 2);
      assert.is(await s.f.admin.llen(fairKeys(name).queue), 1, 'the nested acquire did not queue');
      await inner.release();
      assert.ok(await lock.isLocked());
      assert.is(await lock.holdCount(), 1);
    });
    const next = await within(waiting[0]!, 1_000, 'the waiter after the outermost release');
    await next.release();
  });

  it('issues fencing tokens that strictly increase, also on grants and after the fence key expired', async () => {
    const name = uniqueName('fair');
    const lock = s.client.fairLock(name);
    const tokens: number[] = [];
    const first = await lock.acquire();
    tokens.push(first.fencingToken);
    const waits = [s.other.fairLock(name).acquire()];
    await queued(s.f.admin, name, 1);
    waits.push(s.client.fairLock(name).acquire());
    await queued(s.f.admin, name, 2);
    await first.release();
    for (const wait of waits) {
      const lease = await wait;
      tokens.push(lease.fencingToken);
      await lease.release();
    }
    await s.f.admin.del(fairKeys(name).fence);
    const again = await lock.acquire();
    tokens.push(again.fencingToken);
    await again.release();
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `tokens ${tokens.join(' < ')}`);
  });
});
