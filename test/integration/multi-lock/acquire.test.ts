// client.multiLock(): all or none, one waitMs for the whole, rollback in Redis, no deadlock between
// multi-locks over shared members taken in opposite orders, re-entry and fencing tokens.
import * as assert from 'uvu/assert';
import { LockClient, LockTimeoutError, type Lease } from '../../../src/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { setup, sleep } from '../../helpers/fixture.ts';

describe('LockClient#multiLock: acquire', (it) => {
  const s = setup(it);
  const key = (name: string) => `relock:{${name}}`;
  const names = (n: number) => {
    const base = uniqueName('multi');
    return Array.from({ length: n }, (_, i) => `${base}:${i}`);
  };

  it('takes nothing when one member is held elsewhere, and rolls back the members it took', async () => {
    const [a, b, c] = names(3);
    const held = await s.other.lock(b!).acquire();
    const multi = s.client.multiLock([s.client.lock(c!), s.client.lock(b!), s.client.lock(a!)]);
    // a is taken first (name order), then b is waited for: a must be given back.
    const error = await rejects(multi.acquire({ waitMs: 200 }));
    assert.instance(error, LockTimeoutError);
    assert.is(error.lockName, multi.name);
    assert.match(error.message, new RegExp(`member "${b}" is held`));
    assert.is(await s.f.admin.exists(key(a!), key(c!)), 0, 'a and c are not held in Redis');
    assert.is(await s.client.multiLock([s.client.lock(a!), s.client.lock(b!)]).tryAcquire(), null);
    assert.is(await s.f.admin.exists(key(a!)), 0, 'tryAcquire rolled a back too');
    assert.is(s.client.waiting, 0);
    await held.release();
    const lease = await multi.acquire({ waitMs: 0 });
    assert.is(await s.f.admin.exists(key(a!), key(b!), key(c!)), 3);
    await lease.release();
    assert.is(await s.f.admin.exists(key(a!), key(b!), key(c!)), 0);
  });

  it('rolls back what it took when its wait is aborted or the client closes', async () => {
    const [a, b] = names(2);
    const held = await s.other.lock(b!).acquire();
    const controller = new AbortController();
    const waiting = rejects(s.client.multiLock([s.client.lock(a!), s.client.lock(b!)]).acquire({ signal: controller.signal }));
    await eventually(async () => (await s.f.admin.exists(key(a!))) === 1 && s.client.waiting === 1, 'a taken, b waited for');
    const reason = new Error('no longer needed');
    controller.abort(reason);
    assert.is(await within(waiting, 2_000, 'the aborted wait'), reason);
    assert.is(await s.f.admin.exists(key(a!)), 0, 'a given back');

    // On a connection passed in, which stays open after close() (a client's own one closes with it,
    // and what it held then ends with its lease, as for any lock).
    const redis = s.f.server.connect();
    const client = new LockClient({ redis });
    const closing = rejects(client.multiLock([client.lock(a!), client.lock(b!)]).acquire());
    await eventually(async () => (await s.f.admin.exists(key(a!))) === 1 && client.waiting === 1, 'a taken again, b waited for');
    await client.close();
    assert.is((await within(closing, 2_000, 'the wait close() ended')).name, 'AbortError');
    await eventually(async () => (await s.f.admin.exists(key(a!))) === 0, 'a given back after close()', 2_000);
    redis.disconnect();
    await held.release();
  });

  it('applies waitMs to the whole acquire, not to each member', async () => {
    const [a, b] = names(2);
    const heldA = await s.other.lock(a!).acquire();
    const heldB = await s.other.lock(b!).acquire();
    setTimeout(() => void heldA.release(), 250);
    const started = performance.now();
    const error = await rejects(s.client.multiLock([s.client.lock(a!), s.client.lock(b!)]).acquire({ waitMs: 500 }));
    const waited = performance.now() - started;
    assert.instance(error, LockTimeoutError);
    assert.ok(waited >= 480 && waited < 700, `gave up after ${Math.round(waited)} ms, not 250 + 500`);
    assert.is(await s.f.admin.exists(key(a!)), 0, 'a given back');
    await heldB.release();
  });

  it('never deadlocks nor overlaps: multi-locks over shared members in opposite orders, from two clients', async () => {
    const [x, y, z] = names(3);
    // Dining philosophers: every pair shares a member with the next, each given in its own order.
    const sets = [
      [x!, y!],
      [y!, x!],
      [y!, z!],
      [z!, x!],
      [z!, y!, x!],
    ];
    const inside = new Map<string, number>();
    let overlaps = 0;
    let sections = 0;
    const runs = [s.client, s.other].flatMap((client) =>
      sets.map(async (set) => {
        const multi = client.multiLock(set.map((name) => client.lock(name)));
        for (let i = 0; i < 6; i++) {
          await multi.runExclusive(async () => {
            for (const name of set) if ((inside.get(name) ?? 0) > 0) overlaps++;
            for (const name of set) inside.set(name, (inside.get(name) ?? 0) + 1);
            await sleep(1 + Math.random() * 3);
            for (const name of set) inside.set(name, inside.get(name)! - 1);
            sections++;
          });
        }
      }),
    );
    await within(Promise.all(runs), 15_000, 'every multi-lock loop (a deadlock never finishes)');
    assert.is(sections, 60);
    assert.is(overlaps, 0);
  });

  it('re-enters in its context, member by member, and a member lock re-enters inside it', async () => {
    const [a, b] = names(2);
    const multi = s.client.multiLock([s.client.lock(a!), s.client.lock(b!)]);
    await multi.runExclusive(async (outer) => {
      const nested = await multi.acquire({ waitMs: 0 });
      assert.is(nested.holdCount, 2);
      assert.is(nested.fencingToken, outer.fencingToken);
      assert.is(await multi.holdCount(), 2);
      const member = await s.client.lock(b!).acquire({ waitMs: 0 });
      assert.is(member.holdCount, 3);
      assert.is(member.fencingToken, outer.members[1]!.fencingToken);
      await member.release();
      await nested.release();
      assert.is(await multi.holdCount(), 1);
      assert.ok(await s.client.lock(a!).isHeldByCurrentContext());
    });
    assert.is(await s.f.admin.exists(key(a!), key(b!)), 0);
    // A multi-lock over a member this context holds already re-enters that one and takes the other.
    const single = await s.client.lock(a!).acquire();
    await single.run(async () => {
      const lease = await multi.acquire({ waitMs: 0 });
      assert.is(lease.holdCount, 1, 'b is a first hold');
      assert.equal(lease.members.map((m) => m.holdCount), [2, 1]);
      await lease.release();
      assert.ok(await s.client.lock(a!).isHeldByCurrentContext(), 'a stays held by the outer lease');
    });
    await single.release();
  });

  it('issues a fencing token that increases from holder to holder: the highest of its members', async () => {
    const [a, b] = names(2);
    const tokens: number[] = [];
    for (const client of [s.client, s.other, s.client, s.other]) {
      const lease = await client.multiLock([client.lock(b!), client.lock(a!)]).acquire();
      assert.is(lease.fencingToken, Math.max(...lease.members.map((m) => m.fencingToken)));
      assert.equal(lease.members.map((m) => m.name), [b, a], 'members in the order given');
      tokens.push(lease.fencingToken);
      await lease.release();
    }
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `${tokens}`);
  });

  it('takes read and write sides of read-write locks as members', async () => {
    const [a, b] = names(2);
    // Readers of a share it: two multi-locks that read a and write to b each, b apart.
    const readers = [s.client, s.other].map((client, i) => client.multiLock([client.readWriteLock(a!).readLock(), client.lock(`${b}:${i}`)]));
    const both = await Promise.all(readers.map((multi) => multi.acquire({ waitMs: 0 })));
    // A writer of a waits for both; it takes nothing meanwhile.
    const writer = s.client.multiLock([s.client.lock(b!), s.client.readWriteLock(a!).writeLock()]);
    assert.is(await writer.tryAcquire(), null);
    assert.is(await s.f.admin.exists(key(b!)), 0, 'b rolled back');
    await Promise.all(both.map((lease) => lease.release()));
    const lease = await writer.acquire({ waitMs: 2_000 });
    assert.is(await readers[0]!.tryAcquire(), null, 'no reader beside the writer');
    await lease.release();
  });

  it('mixes lock() and fairLock() members', async () => {
    const [a, b] = names(2);
    const multi = (client: typeof s.client) => client.multiLock([client.fairLock(a!), client.lock(b!)]);
    const held = await multi(s.other).acquire();
    let got: Lease | undefined;
    const waiting = multi(s.client).acquire().then((lease) => (got = lease));
    await sleep(100);
    assert.is(got, undefined);
    await held.release();
    await (await within(waiting, 2_000, 'the waiter after the release')).release();
    assert.not.ok(await multi(s.client).isLocked());
  });
});
