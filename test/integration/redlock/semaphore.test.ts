// client.semaphore() on a Redlock client of 3 masters (src/semaphore/quorum.ts): the limit under
// contention from several clients with multi-permit acquires, one master down, two down, split
// attempts that leave nothing behind, the per-master-count trap (masters arranged by hand so that a
// count per master would admit a third holder of two permits), the stored limit, wake-ups counted
// per release, the watchdog on a majority, and fencing tokens.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import * as assert from 'uvu/assert';
import { LockClient, LockError, LockLostError, type Lease } from '../../../src/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { scriptCalls as countScripts, sleep } from '../../helpers/fixture.ts';
import { setupMasters } from './masters.ts';

const keysOf = (name: string) => {
  const sem = `relock:{${name}}:sem`;
  return { sem, leases: `${sem}:leases`, fence: `${sem}:fence` };
};

/** Resolves with the signal's reason once it aborts. */
const aborted = (signal: AbortSignal, ms: number, what: string) =>
  within(signal.aborted ? Promise.resolve(signal.reason) : new Promise((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true })), ms, what);

describe('LockClient#semaphore on a Redlock client of 3 masters', (it) => {
  const m = setupMasters(it, 3);

  /** What a master holds of a semaphore, but its fence: nothing once every lease is gone. */
  const leftOn = async (i: number, name: string) => {
    const { sem, leases } = keysOf(name);
    return { slots: await m.admins[i]!.hgetall(sem), leases: await m.admins[i]!.zrange(leases, '0', '-1') };
  };
  const emptyEverywhere = async (name: string) => {
    for (let i = 0; i < 3; i++) {
      const left = await leftOn(i, name);
      if (Object.keys(left.slots).length > 0 || left.leases.length > 0) return false;
    }
    return true;
  };

  /** Writes a live lease of `owner` holding `slots` on master i, by hand (the layout of lua/semaphore/quorum-slots.lua.inc). */
  const arrange = async (i: number, name: string, limit: number, owner: string, slots: number[]) => {
    const admin = m.admins[i]!;
    const { sem, leases } = keysOf(name);
    const [seconds] = (await admin.time()) as unknown as [string, string];
    const fields: Record<string, string> = { limit: String(limit), [owner]: `${slots.length}:${slots.join(',')}` };
    for (const slot of slots) fields[String(slot)] = owner;
    await admin.hset(sem, fields);
    await admin.zadd(leases, Number(seconds) * 1000 + 60_000, owner);
    await admin.pexpire(sem, 65_000);
    await admin.pexpire(leases, 65_000);
  };

  it('never lets more than `permits` be held at once, under contention from three clients asking for 1 or 2 permits', async () => {
    const name = uniqueName('rsem');
    const clients = [m.client(), m.client(), m.client()];
    let held = 0;
    let most = 0;
    let sections = 0;
    const loop = async (client: LockClient, i: number) => {
      const semaphore = client.semaphore(name, { permits: 3 });
      for (let round = 0; round < 8; round++) {
        const permits = (i + round) % 2 === 0 ? 2 : 1;
        await semaphore.runExclusive(
          async () => {
            held += permits;
            most = Math.max(most, held);
            await sleep(2 + Math.random() * 6);
            held -= permits;
            sections++;
          },
          { permits, waitMs: 10_000 },
        );
      }
    };
    await Promise.all([...clients, ...clients].map((client, i) => loop(client, i)));
    assert.is(sections, 48);
    assert.ok(most <= 3, `${most} permits held at once`);
    assert.ok(most >= 2, `${most}: the sections never ran side by side`);
    assert.is(await clients[0]!.semaphore(name, { permits: 3 }).availablePermits(), 3);
    await eventually(() => emptyEverywhere(name), 'every master empty', 2_000);
  }, 30_000);

  it('takes `permits` per acquire, counts what is left on a majority, and gives increasing fencing tokens across clients', async () => {
    const name = uniqueName('rsem');
    const [a, b] = [m.client().semaphore(name, { permits: 3 }), m.client().semaphore(name, { permits: 3 })];
    const two = await a.acquire({ permits: 2 });
    assert.is(await b.availablePermits(), 1);
    assert.is(await b.tryAcquire({ permits: 2 }), null);
    const one = await b.acquire();
    assert.ok(one.fencingToken > two.fencingToken, `${one.fencingToken} > ${two.fencingToken}`);
    assert.is(await a.availablePermits(), 0);
    // Each lease holds its slots on a majority of masters, the same slots on each (an acquire settles at
    // a majority: the third master's copy may come later, or be given back when it lost a race there).
    const held = new Map<string, Map<string, number>>();
    for (let i = 0; i < 3; i++) {
      const { slots } = await leftOn(i, name);
      for (const [field, value] of Object.entries(slots)) {
        if (!field.includes(':')) continue;
        const seen = held.get(field) ?? new Map<string, number>();
        seen.set(value, (seen.get(value) ?? 0) + 1);
        held.set(field, seen);
      }
    }
    assert.is(held.size, 2, 'two leases');
    for (const [owner, seen] of held) assert.ok([...seen.values()].some((n) => n >= 2), `${owner}: ${JSON.stringify([...seen])} on a majority`);
    await two.release();
    const next = await a.acquire({ permits: 2 });
    assert.ok(next.fencingToken > one.fencingToken);
    await Promise.all([one.release(), next.release()]);
    await eventually(() => emptyEverywhere(name), 'every master empty', 2_000);
  });

  it('keeps working with one master down: acquire, availablePermits, release', async () => {
    const client = m.client();
    const name = uniqueName('rsem');
    const semaphore = client.semaphore(name, { permits: 2 });
    await (await semaphore.acquire()).release(); // connected to all
    await m.servers[2]!.kill();
    try {
      const lease = await within(semaphore.acquire({ permits: 2 }), 5_000, 'the acquire with a minority down');
      assert.is(await semaphore.availablePermits(), 0);
      assert.is(await m.client().semaphore(name, { permits: 2 }).tryAcquire(), null);
      await lease.release();
      assert.is(await semaphore.availablePermits(), 2);
    } finally {
      await m.servers[2]!.restart();
    }
  });

  it('rejects acquire, tryAcquire, availablePermits and a finite wait with ERR_LOCK_NO_QUORUM naming each unreachable master when two of three are down', async () => {
    const client = m.client();
    const name = uniqueName('rsem');
    const semaphore = client.semaphore(name, { permits: 2 });
    await (await semaphore.acquire()).release();
    await Promise.all([m.servers[0]!.kill(), m.servers[2]!.kill()]);
    try {
      // A finite wait rides out the lost quorum until it ends, then names the masters too.
      for (const call of [() => semaphore.acquire(), () => semaphore.tryAcquire({ permits: 2 }), () => semaphore.availablePermits(), () => semaphore.acquire({ waitMs: 1_500 })]) {
        const error = await within(rejects(call()), 6_000, 'the call with a majority down');
        assert.instance(error, LockError);
        assert.is(error.code, 'ERR_LOCK_NO_QUORUM');
        for (const down of [m.servers[0]!, m.servers[2]!]) assert.ok(error.message.includes(`${down.host}:${down.port}`), `${down.port} named in: ${error.message}`);
      }
      // What the live master took is given back.
      await eventually(async () => (await leftOn(1, name)).leases.length === 0, 'nothing left on the live master', 2_000);
    } finally {
      await Promise.all([m.servers[0]!.restart(), m.servers[2]!.restart()]);
    }
  });

  it('leaves nothing behind split attempts: masters that disagree, and many clients at once', async () => {
    // One permit, held by a different (made-up) owner on masters 0 and 1: no majority agrees.
    const name = uniqueName('rsem');
    await arrange(0, name, 1, 'x:stale', [0]);
    await arrange(1, name, 1, 'y:stale', [0]);
    const client = m.client();
    assert.is(await client.semaphore(name, { permits: 1 }).tryAcquire(), null);
    await eventually(async () => (await leftOn(2, name)).leases.length === 0, 'the slot taken on master 2 given back', 2_000);
    assert.is(await client.semaphore(name, { permits: 1 }).availablePermits(), 1, 'no slot held on a majority');
    // Twelve tries at once over four clients for two permits: at most two hold (the masters may even
    // split them all: a try does not retry), and once they release, no master keeps anything.
    const other = uniqueName('rsem');
    const clients = [m.client(), m.client(), m.client(), m.client()];
    const leases = (await Promise.all(Array.from({ length: 12 }, (_, i) => clients[i % 4]!.semaphore(other, { permits: 2 }).tryAcquire()))).filter(
      (lease): lease is Lease => lease !== null,
    );
    assert.ok(leases.length <= 2, `${leases.length} leases of 2 permits`);
    await Promise.all(leases.map((lease) => lease.release()));
    await eventually(() => emptyEverywhere(other), 'every master empty after the releases', 2_000);
    // Twelve waits at once: a split attempt retries after a few random ms, so each gets its lease
    // (held 5 ms), never more than two at once, and again nothing is left behind.
    let holding = 0;
    let most = 0;
    await within(
      Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          clients[i % 4]!.semaphore(other, { permits: 2 }).runExclusive(async () => {
            most = Math.max(most, ++holding);
            await sleep(5);
            holding--;
          }, { waitMs: 10_000 }),
        ),
      ),
      12_000,
      'twelve waits for two permits',
    );
    assert.ok(most >= 1 && most <= 2, `${most} held at once`);
    await eventually(() => emptyEverywhere(other), 'every master empty after the waits', 2_000);
  });

  it('refuses a third holder of two permits where a count per master would admit one', async () => {
    // The per-master count: a single-server semaphore of 2 permits on each master. A holds on masters
    // 0 and 1, B on 1 and 2; every master counts 2 holders at most, so each is "full" only where
    // both are, and C finds room on masters 0 and 2: a majority, a third holder of two permits.
    const naive = uniqueName('naive');
    const alone = m.servers.map((server) => new LockClient({ redis: server.url }));
    const single = alone.map((client) => client.semaphore(naive, { permits: 2 }));
    const take = async (masters: number[]) => (await Promise.all(masters.map((i) => single[i]!.tryAcquire()))).filter(Boolean).length;
    assert.is(await take([0, 1]), 2, 'A on masters 0 and 1');
    assert.is(await take([1, 2]), 2, 'B on masters 1 and 2');
    assert.is(await take([0, 1, 2]), 2, 'C on masters 0 and 2: a majority, so C "holds" too');
    for (const sem of single) assert.is(await sem.availablePermits(), 0);

    // The same state as slots: A holds slot 0 on masters 0 and 1, B slot 1 on masters 1 and 2.
    const name = uniqueName('rsem');
    await arrange(0, name, 2, 'a:lease', [0]);
    await arrange(1, name, 2, 'a:lease', [0]);
    await arrange(1, name, 2, 'b:lease', [1]);
    await arrange(2, name, 2, 'b:lease', [1]);
    // Each master has a slot free (slot 1 on master 0, slot 0 on master 2), but no majority has one.
    const semaphore = m.client().semaphore(name, { permits: 2 });
    assert.is(await semaphore.availablePermits(), 0);
    assert.is(await semaphore.tryAcquire(), null);
    assert.instance(await rejects(semaphore.acquire({ waitMs: 300 })), Error);
    await eventually(async () => (await leftOn(0, name)).leases.length === 1 && (await leftOn(2, name)).leases.length === 1, 'what C took given back', 2_000);
    await Promise.all(alone.map((client) => client.close()));
  });

  it('refuses another limit while leases live (ERR_LOCK_PERMITS_MISMATCH), and takes it once none is left', async () => {
    const name = uniqueName('rsem');
    const lease = await m.client().semaphore(name, { permits: 3 }).acquire();
    const other = m.client().semaphore(name, { permits: 2 });
    for (const call of [() => other.acquire(), () => other.tryAcquire(), () => other.availablePermits()]) {
      const error = await rejects(call());
      assert.is(error.code, 'ERR_LOCK_PERMITS_MISMATCH');
      assert.match(error.message, /limit of 3 permits, not 2/);
    }
    await lease.release();
    await eventually(() => emptyEverywhere(name), 'every master empty', 2_000);
    await (await other.acquire({ permits: 2 })).release();
  });

  it('wakes one waiter per freed permit: one delivery per release over three masters, and the others stay asleep', async () => {
    const name = uniqueName('rsem');
    const holder = m.client().semaphore(name, { permits: 2 });
    const client = m.client();
    const held = await holder.acquire({ permits: 2 });
    const acquired: Lease[] = [];
    const waits = Array.from({ length: 4 }, () => client.semaphore(name, { permits: 2 }).acquire().then((lease) => void acquired.push(lease)));
    await eventually(() => client.waiting === 4, 'four queued');
    let wakes = 0;
    const onWake = (message: unknown) => {
      if ((message as { clientId: string }).clientId === client.id) wakes++;
    };
    subscribe('relock:wake', onWake);
    const scriptCalls = () => countScripts(...m.admins);
    try {
      await held.release(); // 2 permits: 2 waiters
      await eventually(() => acquired.length === 2, 'two waiters have a permit each');
      await sleep(100);
      const before = await scriptCalls();
      await sleep(400);
      assert.is((await scriptCalls()) - before, 0, 'the two waiters left send nothing while they sleep');
      assert.is(acquired.length, 2);
      assert.is(client.waiting, 2);
      assert.is(wakes, 1, 'the release, published on three masters, is delivered once');
      await acquired[0]!.release(); // 1 permit: 1 waiter
      await eventually(() => acquired.length === 3, 'the third waiter');
      await sleep(100);
      assert.is(acquired.length, 3);
      assert.is(wakes, 2);
    } finally {
      unsubscribe('relock:wake', onWake);
    }
    await acquired[1]!.release();
    await acquired[2]!.release();
    await eventually(() => acquired.length === 4, 'the last waiter');
    await acquired[3]!.release();
    await Promise.all(waits);
  });

  it('keeps a watchdog lease alive past its lease with one master down, and aborts its signal when a majority is gone', async () => {
    // A 1 s lease: the loss comes at the lease less its margin (900 ms) after the last renewal that
    // reached a majority, which may have been sent just before the second kill: so within the lease
    // of the kill, and the bound leaves 500 ms more for a busy machine's stalls (the test matrix runs
    // cells side by side on two cores: a 600 ms lease with a 600 ms bound failed by 73 ms once).
    const client = m.client({ leaseMs: 1_000 });
    const lease = await client.semaphore(uniqueName('rsem'), { permits: 2 }).acquire({ permits: 2 });
    await m.servers[0]!.kill();
    try {
      await sleep(1_500);
      assert.is(lease.signal.aborted, false, 'renewed on a majority');
      const killedAt = performance.now();
      await m.servers[1]!.kill();
      assert.instance(await aborted(lease.signal, 3_000, 'the signal'), LockLostError);
      assert.ok(performance.now() - killedAt < 1_500, `lost ${Math.round(performance.now() - killedAt)} ms after the second kill: within its lease, and a stall's room`);
    } finally {
      await Promise.all([m.servers[0]!.restart(), m.servers[1]!.restart()]);
    }
  });

  it('renews a lease only where a master holds the slots its majority agreed on: a stray entry of other slots does not make a majority', async () => {
    const client = m.client({ leaseMs: 600 });
    const name = uniqueName('rsem');
    const lease = await client.semaphore(name, { permits: 3 }).acquire();
    const { sem } = keysOf(name);
    // Master 2's entry of this lease now claims another slot (as if it had taken other slots and its
    // give-back were lost), and master 0 goes down: only master 1 holds the agreed slot.
    // The acquire settles at a majority: master 2's copy may still be on its way.
    await eventually(async () => Object.keys(await m.admins[2]!.hgetall(sem)).some((field) => field.includes(':')), 'the lease on master 2', 2_000);
    const fields = await m.admins[2]!.hgetall(sem);
    const owner = Object.keys(fields).find((field) => field.includes(':'))!;
    const slot = fields[owner]!.split(':')[1]!;
    const other = String((Number(slot) + 1) % 3);
    await m.admins[2]!.hdel(sem, slot);
    await m.admins[2]!.hset(sem, other, owner, owner, `1:${other}`);
    await m.servers[0]!.kill();
    try {
      assert.instance(await aborted(lease.signal, 2_000, 'the signal'), LockLostError);
    } finally {
      await m.servers[0]!.restart();
    }
  });

  it('signals no loss for a fresh lease that a watchdog tick renewed before its majority decided: acquire and release in loops for 2 s, no contention', async () => {
    const client = m.client({ leaseMs: 300 });
    const semaphore = client.semaphore(uniqueName('rsem'), { permits: 100 });
    let lost = 0;
    let rounds = 0;
    // Losses that a renewal's answer signalled (the defect: "not renewed" on every master). A lease
    // that a loaded machine could not renew before its deadline is another loss, not counted here.
    const onLost = (message: unknown) => {
      const { clientId, error } = message as { clientId: string; error: Error };
      if (clientId === client.id && /expired or was force-unlocked while held/.test(error.message)) lost++;
    };
    subscribe('relock:lost', onLost);
    // A loop of acquire/release holding each lease a moment (the replies of a renewal sent during its
    // attempt land while it is held), beside loops of 1 permit each (100 permits: no contention) that
    // hold theirs 150 ms, past their next renewal (a lease whose first renewal went wrong is renewed
    // again while held). Leases overlap, so the watchdog ticks every 100 ms (a third of the lease) on
    // its own schedule, and ticks fall between attempts and their decisions.
    const loop = (holdMs: number) => async () => {
      const until = performance.now() + 2_000;
      while (performance.now() < until) {
        // (A finite wait: under load an attempt may not be answered within the 300 ms lease.)
        const lease = await semaphore.acquire({ waitMs: 5_000 });
        await sleep(holdMs);
        // A lease lost meanwhile (whatever the cause) may be gone when released.
        await lease.release().catch((error: unknown) => {
          if (!lease.signal.aborted) throw error;
        });
        rounds++;
      }
    };
    try {
      await Promise.all([loop(1)(), ...Array.from({ length: 5 }, loop(150))]);
    } finally {
      unsubscribe('relock:lost', onLost);
    }
    assert.is(lost, 0, `${lost} LockLostError in ${rounds} acquisitions`);
    assert.ok(rounds >= 20, `${rounds} acquisitions: the loops ran`);
  }, 20_000);

  it('turns WRONGTYPE and FENCEOVERFLOW on the masters into their codes, writing nothing', async () => {
    const semaphore = (name: string) => m.client().semaphore(name, { permits: 2 });
    const wrong = uniqueName('rsem');
    for (const admin of m.admins) await admin.set(keysOf(wrong).sem, 'not a hash');
    assert.is((await rejects(semaphore(wrong).acquire())).code, 'ERR_LOCK_WRONG_TYPE');
    const full = uniqueName('rsem');
    for (const admin of m.admins) await admin.set(keysOf(full).fence, '9007199254740991');
    assert.is((await rejects(semaphore(full).tryAcquire())).code, 'ERR_LOCK_FENCE_OVERFLOW');
    for (let i = 0; i < 3; i++) {
      assert.is(await m.admins[i]!.get(keysOf(wrong).sem), 'not a hash');
      assert.equal(await leftOn(i, full), { slots: {}, leases: [] });
    }
  });

  it('rejects more than 1000 permits on a Redlock client, naming `permits`, before any I/O', () => {
    const error = (() => {
      try {
        m.client().semaphore(uniqueName('rsem'), { permits: 1001 });
      } catch (caught) {
        return caught as Error;
      }
      return undefined;
    })();
    assert.instance(error, RangeError);
    assert.match(error!.message, /`permits`/);
  });
});
