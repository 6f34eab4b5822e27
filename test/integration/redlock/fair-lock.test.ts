// client.fairLock() on a Redlock client of 3 masters: waiters of several clients are served in the
// order they started waiting (the gate master's queue), the quorum excludes (a minority down, the
// gate included, costs no exclusion; a majority down is ERR_LOCK_NO_QUORUM, and a held lease's
// signal fires), fencing tokens rise across holders, and its keys are apart from client.lock()'s.
import * as assert from 'uvu/assert';
import { LockError, LockLostError, type Lease, type LockClient } from '../../../src/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { setupMasters, type Masters } from './masters.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The masters by host:port: the gate first (when none is down), then the next gates in turn. */
function byLabel(m: Masters): number[] {
  const label = (i: number) => `${m.servers[i]!.host}:${m.servers[i]!.port}`;
  return m.servers.map((_, i) => i).sort((a, b) => (label(a) < label(b) ? -1 : 1));
}

/** The gate: the master first by host:port (when none is down). */
const gateOf = (m: Masters): number => byLabel(m)[0]!;

/** The gate once `gate` is down or silent: the next master by host:port. */
const nextGate = (m: Masters, gate: number): number => byLabel(m).find((i) => i !== gate)!;

/** The gate queue's length of `name` on master `i`. */
const queued = (m: Masters, i: number, name: string) => m.admins[i]!.llen(`relock:{${name}}:fair:q`);

/** One holder's section: when it began and ended, its token, who it was. */
interface Section {
  readonly who: number;
  readonly token: number;
  readonly start: number;
  readonly end: number;
}

/** Sections that began before the one before them ended. */
function overlaps(sections: readonly Section[]): number {
  const sorted = [...sections].sort((a, b) => a.start - b.start);
  return sorted.filter((section, i) => i > 0 && section.start < sorted[i - 1]!.end).length;
}

describe('Redlock client.fairLock() (3 masters)', (it) => {
  const m = setupMasters(it, 3);

  /** `n` waiters from the clients in turn, each started once the one before is in the gate's queue; each holds `holdMs`. */
  const waitInOrder = async (clients: readonly LockClient[], name: string, n: number, gate: number, holdMs = 5) => {
    const sections: Section[] = [];
    const done: Promise<void>[] = [];
    for (let i = 0; i < n; i++) {
      const lock = clients[i % clients.length]!.fairLock(name);
      done.push(
        lock.runExclusive(
          async (lease) => {
            const start = performance.now();
            await sleep(holdMs);
            sections.push({ who: i, token: lease.fencingToken, start, end: performance.now() });
          },
          { waitMs: 15_000 },
        ),
      );
      await eventually(async () => (await queued(m, gate, name)) === i + 1, `waiter ${i} in the gate's queue`);
    }
    return { sections, done: Promise.all(done) };
  };

  it('serves waiters of 3 clients in the order they started waiting', async () => {
    const clients = [m.client(), m.client(), m.client()];
    const name = uniqueName('rl-fair');
    const held = await clients[0]!.fairLock(name).acquire();
    const { sections, done } = await waitInOrder(clients, name, 9, gateOf(m));
    await held.release();
    await within(done, 10_000, 'every waiter');
    assert.equal(
      sections.map((section) => section.who),
      [0, 1, 2, 3, 4, 5, 6, 7, 8],
    );
    assert.is(overlaps(sections), 0);
    for (let i = 1; i < sections.length; i++) assert.ok(sections[i]!.token > sections[i - 1]!.token, 'tokens rise from holder to holder');
  });

  it('goes on in order with a master that is not the gate killed mid-wait', async () => {
    const clients = [m.client(), m.client(), m.client()];
    const name = uniqueName('rl-fair');
    const gate = gateOf(m);
    const victim = (gate + 1) % 3;
    const held = await clients[1]!.fairLock(name).acquire();
    const { sections, done } = await waitInOrder(clients, name, 6, gate);
    await m.servers[victim]!.kill();
    try {
      await held.release();
      await within(done, 10_000, 'every waiter with a minority down');
      assert.equal(
        sections.map((section) => section.who),
        [0, 1, 2, 3, 4, 5],
      );
      assert.is(overlaps(sections), 0);
    } finally {
      await m.servers[victim]!.restart();
    }
  });

  it('goes on with the gate itself killed mid-wait: the waiters queue again on the next gate, 0 overlaps, tokens rising', async () => {
    const clients = [m.client(), m.client(), m.client()];
    const name = uniqueName('rl-fair');
    const gate = gateOf(m);
    const held = await clients[0]!.fairLock(name).acquire();
    const { sections, done } = await waitInOrder(clients, name, 6, gate, 20);
    await m.servers[gate]!.kill();
    try {
      // They queue on the next gate (the next by host:port), behind nobody: the holder keeps the quorum lock.
      const next = nextGate(m, gate);
      await eventually(async () => (await queued(m, next, name)) >= 5, 'the waiters queued again on the next gate', 5_000);
      assert.not.ok(held.signal.aborted, 'the holder keeps its lease: the quorum still holds it');
      await held.release();
      await within(done, 10_000, 'every waiter after the gate went down');
      assert.is(sections.length, 6);
      assert.is(overlaps(sections), 0);
      const byStart = [...sections].sort((a, b) => a.start - b.start);
      for (let i = 1; i < byStart.length; i++) assert.ok(byStart[i]!.token > byStart[i - 1]!.token, 'tokens rise from holder to holder');
    } finally {
      await m.servers[gate]!.restart();
    }
  });

  it('goes on with the gate silent (SIGSTOP: its connections stay up): the waiters queue on the next gate within about a second, 0 overlaps', async () => {
    const clients = [m.client(), m.client(), m.client()];
    const name = uniqueName('rl-fair');
    const gate = gateOf(m);
    const next = nextGate(m, gate);
    const held = await clients[0]!.fairLock(name).acquire();
    m.servers[gate]!.pause();
    try {
      const sections: Section[] = [];
      const started = performance.now();
      const waits = [1, 2, 1, 2].map((c, who) =>
        clients[c]!.fairLock(name).runExclusive(
          async (lease) => {
            const start = performance.now();
            await sleep(5);
            sections.push({ who, token: lease.fencingToken, start, end: performance.now() });
          },
          { waitMs: 4_000 },
        ),
      );
      // Without the silence rule their joins would wait on the frozen gate for the 5 s command timeout.
      // The first holds the next gate's fair lock (it waits for the quorum lock); three queue behind it.
      await eventually(async () => (await queued(m, next, name)) >= 3, 'the waiters queued on the next gate', 3_000);
      const movedMs = performance.now() - started;
      assert.not.ok(held.signal.aborted, 'the holder keeps its lease: the quorum still holds it');
      await held.release();
      await within(Promise.all(waits), 4_000, 'every waiter with the gate frozen');
      assert.is(sections.length, 4);
      assert.is(overlaps(sections), 0);
      assert.ok(movedMs < 2_500, `queued on the next gate after ${Math.round(movedMs)} ms`);
    } finally {
      m.servers[gate]!.resume();
    }
  });

  it('rejects with ERR_LOCK_NO_QUORUM naming the masters down when two of three are, and leaves no hold on the gate', async () => {
    const client = m.client();
    await (await client.fairLock(uniqueName('rl-fair')).acquire()).release(); // connected to all
    const gate = gateOf(m);
    const down = [0, 1, 2].filter((i) => i !== gate);
    await Promise.all(down.map((i) => m.servers[i]!.kill()));
    try {
      const names: string[] = [];
      for (const attempt of [(lock = client.fairLock(uniqueName('rl-fair'))) => (names.push(lock.name), lock.acquire()), () => client.fairLock(uniqueName('rl-fair')).tryAcquire()]) {
        const error = await within(rejects(attempt()), 6_000, 'the acquire with a majority down');
        assert.instance(error, LockError);
        assert.is(error.code, 'ERR_LOCK_NO_QUORUM');
        for (const i of down) assert.ok(error.message.includes(`${m.servers[i]!.host}:${m.servers[i]!.port}`), `${m.servers[i]!.port} named in: ${error.message}`);
      }
      await eventually(async () => (await m.admins[gate]!.exists(`relock:{${names[0]}}:fair`)) === 0, "the gate's hold was given back", 2_000);
    } finally {
      await Promise.all(down.map((i) => m.servers[i]!.restart()));
    }
  });

  it('issues fencing tokens that rise across holders of several clients', async () => {
    const clients = [m.client(), m.client()];
    const name = uniqueName('rl-fair');
    const tokens: number[] = [];
    for (let i = 0; i < 6; i++) {
      const lease = await clients[i % 2]!.fairLock(name).acquire();
      tokens.push(lease.fencingToken);
      await lease.release();
    }
    for (let i = 1; i < tokens.length; i++) assert.ok(tokens[i]! > tokens[i - 1]!, `${tokens}`);
    // The quorum lock's tokens (a clock floor), not the gate's counter.
    assert.ok(tokens[0]! > 1e12, `token ${tokens[0]}`);
  });

  it('aborts lease.signal when a majority of masters goes down while held, not when the gate alone does', async () => {
    const client = m.client({ leaseMs: 600 });
    const gate = gateOf(m);
    const lease: Lease = await client.fairLock(uniqueName('rl-fair')).acquire();
    await m.servers[gate]!.kill();
    const other = (gate + 1) % 3;
    try {
      await sleep(800);
      assert.is(lease.signal.aborted, false, 'the gate alone down: the quorum hold is renewed on a majority');
      await m.servers[other]!.kill();
      const reason = await within(
        lease.signal.aborted ? Promise.resolve(lease.signal.reason) : new Promise((resolve) => lease.signal.addEventListener('abort', () => resolve(lease.signal.reason), { once: true })),
        2_000,
        'the signal after a majority went down',
      );
      assert.instance(reason, LockLostError);
      await lease.release().catch(() => undefined);
    } finally {
      await Promise.all([m.servers[gate]!.restart(), m.servers[other]!.restart()]);
    }
  });

  it("keeps exclusion when only the gate's hold is lost: no signal, and the next in line waits for the quorum lock", async () => {
    const [mine, theirs] = [m.client(), m.client()];
    const name = uniqueName('rl-fair');
    const gate = gateOf(m);
    const lease = await mine.fairLock(name).acquire();
    const waiting = theirs.fairLock(name).acquire();
    await eventually(async () => (await queued(m, gate, name)) === 1, 'the waiter in the gate queue');
    await m.admins[gate]!.del(`relock:{${name}}:fair`); // the gate's hold gone (a gate restarted empty, an expiry)
    let acquired = false;
    void waiting.then(() => (acquired = true));
    await sleep(600); // the gate's heartbeat pumps the free fair lock to the waiter, which then waits on the quorum lock
    assert.is(await queued(m, gate, name), 0, 'the waiter was granted at the gate');
    assert.not.ok(acquired, 'the quorum lock still excludes it');
    assert.not.ok(lease.signal.aborted, "losing the gate's hold is not a loss of the lease");
    await lease.release();
    const next = await within(waiting, 2_000, 'the waiter after the release');
    assert.ok(next.fencingToken > lease.fencingToken);
    await next.release();
  });

  it('re-enters both holds: a nested acquire with a longer fixed lease lengthens the gate hold too', async () => {
    const client = m.client();
    const name = uniqueName('rl-fair');
    const lock = client.fairLock(name);
    const gate = gateOf(m);
    await lock.runExclusive(
      async () => {
        const nested = await lock.acquire({ leaseMs: 5_000 });
        assert.is(nested.holdCount, 2);
        assert.is(await lock.holdCount(), 2);
        const gateTtl = await m.admins[gate]!.pttl(`relock:{${name}}:fair`);
        assert.ok(gateTtl > 4_000, `the gate hold's ttl ${gateTtl} ms`);
        assert.ok((await lock.remainingTtlMs())! > 4_000);
        await nested.release();
        assert.is(await lock.holdCount(), 1);
        assert.equal(Object.values(await m.admins[gate]!.hgetall(`relock:{${name}}:fair`)), ['1'], 'one level left on the gate');
      },
      { leaseMs: 1_000 },
    );
    assert.is(await m.admins[gate]!.exists(`relock:{${name}}:fair`), 0, 'the gate hold released with the outer lease');
  });

  it('is a member of multiLock() like any lock of the client', async () => {
    const client = m.client();
    const [a, b] = [uniqueName('rl-fair'), uniqueName('rl-fair')];
    const both = client.multiLock([client.fairLock(a), client.lock(b)]);
    await both.runExclusive(async () => {
      assert.ok(await client.fairLock(a).isHeldByCurrentContext());
      assert.is(await m.client().fairLock(a).tryAcquire(), null);
    });
    assert.not.ok(await client.fairLock(a).isLocked());
  });

  it('fairLock(x) and lock(x) of one Redlock client do not exclude each other', async () => {
    const client = m.client();
    const name = uniqueName('rl-fair');
    const plain = await client.lock(name).acquire();
    const fair = await client.fairLock(name).tryAcquire();
    assert.ok(fair, 'the fair lock is free while lock(x) is held');
    assert.ok(await client.lock(name).isLocked());
    assert.ok(await client.fairLock(name).isLocked());
    await plain.release();
    assert.ok(await client.fairLock(name).isLocked(), "lock(x)'s release left the fair lock held");
    const again = await client.lock(name).tryAcquire();
    assert.ok(again, 'lock(x) is free while the fair lock is held');
    await again!.release();
    await fair!.release();
    assert.not.ok(await client.fairLock(name).isLocked());
  });
});
