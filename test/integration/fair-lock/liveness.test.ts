// Each liveness rule of the fair lock (docs/fair-lock.md) with its stall measured against its bound,
// with the defaults C = 500 ms (claim), H = 200 ms (heartbeat), D = 1 s (queue deadline).
import * as assert from 'uvu/assert';
import type { Lease, LockClient } from '../../../src/index.ts';
import { describe, eventually, uniqueName, within } from '../../helpers/describe.ts';
import { setup, sleep } from '../../helpers/fixture.ts';
import { startProxy } from '../../helpers/proxy.ts';
import { childProcesses } from './processes.ts';
import { fairKeys, grantChannel, keysLeft, queued, reportStall, sharedNow, silentWaiter, unheard } from './support.ts';

const C = 500;
const H = 200;
const D = 1_000;
/** Scheduling noise on a loaded 2-core machine, on top of a bound. */
const SLACK = 150;

describe('LockClient#fairLock liveness', (it) => {
  const s = setup(it);
  let third: LockClient;
  const { start: child } = childProcesses(it, () => s.f.server.url);
  it.before(() => {
    third = s.f.client();
  });

  it('skips the entries of a waiter process that died at once: PUBLISH reaches nobody', async () => {
    const name = uniqueName('fair');
    const held = await s.client.fairLock(name).acquire();
    const dead = await child(name);
    dead.acquire('a');
    dead.acquire('b');
    await queued(s.f.admin, name, 2);
    const next = s.other.fairLock(name).acquire();
    await queued(s.f.admin, name, 3);
    await dead.kill();
    await unheard(s.f.admin, grantChannel(name, dead.clientId));
    const releasedAt = performance.now();
    await held.release();
    const lease = await within(next, 2_000, 'the live waiter behind the dead one');
    const stall = performance.now() - releasedAt;
    reportStall('dead waiter process (2 entries) skipped', stall);
    assert.ok(stall < 100, `stalled ${stall} ms behind a dead process`);
    await lease.release();
    assert.equal(await keysLeft(s.f.admin, name), []);
  });

  it('stalls the queue for the claim plus at most a heartbeat when a grant races its waiter\'s death', async () => {
    const name = uniqueName('fair');
    const held = await s.client.fairLock(name).acquire();
    const listener = s.f.server.connect();
    const silent = await silentWaiter(s.f.admin, listener, name);
    const next = s.other.fairLock(name).acquire();
    await queued(s.f.admin, name, 2);
    const releasedAt = performance.now();
    await held.release();
    await within(silent.granted, 1_000, 'the grant reaches the waiter that dies');
    listener.disconnect();
    const lease = await within(next, 3_000, 'the live waiter behind it');
    const stall = performance.now() - releasedAt;
    reportStall('grant racing the grantee\'s death', stall);
    assert.ok(stall >= C - 50 && stall < C + H + SLACK, `stalled ${stall} ms (C = ${C}, H = ${H})`);
    await lease.release();
  });

  it('keeps the place of a hung waiter (SIGSTOP), stalls the queue under 2 s, and overlaps nobody after it resumes', async () => {
    const name = uniqueName('fair');
    const held = await s.client.fairLock(name).acquire();
    const hung = await child(name);
    hung.acquire('a', { holdMs: 20 });
    hung.acquire('b', { holdMs: 20 });
    await queued(s.f.admin, name, 2);
    const next = s.other.fairLock(name).acquire();
    await queued(s.f.admin, name, 3);
    hung.signal('SIGSTOP');
    try {
      await sleep(100);
      const releasedAt = performance.now();
      await held.release();
      assert.is(await third.fairLock(name).tryAcquire(), null, 'the frozen waiter keeps its place: tryAcquire gets null');
      const lease = await within(next, 3_000, 'the live waiter behind the frozen one');
      const stall = performance.now() - releasedAt;
      reportStall('hung waiter process (2 entries, SIGSTOP)', stall);
      assert.ok(stall < D + C + H + SLACK && stall < 2_000, `stalled ${stall} ms behind a frozen process`);
      await sleep(50);
      const liveReleasedAt = sharedNow();
      await lease.release();
      hung.signal('SIGCONT');
      // Its grants went stale while it was frozen: it confirms them, finds them gone, and queues again.
      const a = await within(hung.next('acquired', 'a'), 5_000, 'the resumed waiter a');
      const b = await within(hung.next('acquired', 'b'), 5_000, 'the resumed waiter b');
      for (const got of [a, b]) {
        assert.ok(got.at > liveReleasedAt, 'a resumed waiter held only after the live one released');
        assert.ok(got.token > lease.fencingToken);
      }
      await within(hung.next('released', 'a'), 2_000, 'a released');
      await within(hung.next('released', 'b'), 2_000, 'b released');
    } finally {
      hung.signal('SIGCONT');
    }
  });

  it('keeps the lock of a grantee paused right after its grant: the confirm gave it the full lease (no overlap)', async () => {
    const name = uniqueName('fair');
    const held = await s.client.fairLock(name).acquire();
    const paused = await child(name);
    paused.acquire('p', { holdMs: 50 });
    await queued(s.f.admin, name, 1);
    const next = s.other.fairLock(name).acquire();
    await queued(s.f.admin, name, 2);
    await held.release();
    await within(paused.next('acquired', 'p'), 2_000, 'the grantee');
    paused.signal('SIGSTOP');
    try {
      let overlapped = false;
      void next.then(() => (overlapped = true));
      await sleep(C + H + 300);
      const ttl = (await s.other.fairLock(name).remainingTtlMs())!;
      assert.ok(ttl > C, `the paused grantee's lock has ${ttl} ms left: confirmed beyond the claim`);
      assert.not.ok(overlapped, 'nobody held the lock while its holder was paused');
    } finally {
      paused.signal('SIGCONT');
    }
    const released = await within(paused.next('released', 'p'), 2_000, 'the resumed holder releases');
    const lease = await within(next, 2_000, 'the next waiter');
    assert.ok(sharedNow() >= released.at);
    await lease.release();
  });

  it('lets the next waiter in within 500 ms when a waiter aborts or times out, also as its grant arrives', async () => {
    const worst: number[] = [];
    for (let round = 0; round < 8; round++) {
      const name = uniqueName('fair');
      const held = await s.client.fairLock(name).acquire();
      const controller = new AbortController();
      const byTimeout = round % 2 === 1;
      const quitting = s.other
        .fairLock(name)
        .acquire(byTimeout ? { waitMs: 150 } : { signal: controller.signal })
        .then(
          (lease) => lease,
          (error: Error) => error,
        );
      await queued(s.f.admin, name, 1);
      const next = third.fairLock(name).acquire();
      await queued(s.f.admin, name, 2);
      if (byTimeout) await sleep(140 + round);
      let releasedAt = performance.now();
      const releasing = held.release();
      if (!byTimeout) {
        await sleep(round % 4);
        controller.abort();
      }
      await releasing;
      const outcome = await quitting;
      if (!(outcome instanceof Error)) {
        // The grant came before the abort: that waiter holds it; its release is the hand-off.
        releasedAt = performance.now();
        await outcome.release();
      }
      const lease = await within(next, 2_000, `the waiter behind the one that quit (round ${round})`);
      worst.push(performance.now() - releasedAt);
      await lease.release();
      assert.equal(await keysLeft(s.f.admin, name), []);
    }
    const stall = Math.max(...worst);
    reportStall('aborted / timed-out waiter (worst of 8)', stall);
    assert.ok(stall < 500, `the next waiter came in ${worst.map((ms) => ms.toFixed(1)).join(', ')} ms after`);
  });

  it('serves a waiter whose grant message was lost (its connections cut) after its reconnect', async () => {
    const name = uniqueName('fair');
    const proxy = await startProxy({ host: s.f.server.host, port: s.f.server.port });
    try {
      const cut = s.f.client({ redis: { ...proxy.options } });
      cut.on('error', () => undefined);
      const held = await s.client.fairLock(name).acquire();
      const waiting = cut.fairLock(name).acquire();
      await queued(s.f.admin, name, 1);
      const next = s.other.fairLock(name).acquire();
      await queued(s.f.admin, name, 2);
      proxy.blackhole();
      const releasedAt = performance.now();
      await held.release(); // granted: the subscriber counts as a receiver, the message is held
      await sleep(20);
      proxy.cut(); // and lost
      proxy.pass();
      const lease = await within(waiting, 3_000, 'the waiter whose grant message was lost');
      const stall = performance.now() - releasedAt;
      reportStall('lost grant message (connections cut, reconnect)', stall);
      assert.ok(stall < C + H, `stalled ${stall} ms`);
      await lease.release();
      await (await within(next, 2_000, 'the next waiter')).release();
    } finally {
      await proxy.close();
    }
  });

  it('re-queues the waiters whose subscriber was killed (CLIENT KILL TYPE pubsub) and serves them once back', async () => {
    const name = uniqueName('fair');
    const held = await s.client.fairLock(name).acquire();
    const acquired: Lease[] = [];
    const waits = [s.other, third].map((client) => client.fairLock(name).acquire().then((lease) => (acquired.push(lease), lease)));
    await queued(s.f.admin, name, 2);
    await s.f.admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
    const releasedAt = performance.now();
    await held.release(); // nobody hears it: both entries are dropped, the lock stays free
    await eventually(() => acquired.length === 1, 'a waiter after its subscriber came back', 3_000);
    const stall = performance.now() - releasedAt;
    reportStall('subscribers killed (CLIENT KILL TYPE pubsub), re-queued', stall);
    assert.ok(stall < D, `stalled ${stall} ms`);
    await acquired[0]!.release();
    await within(Promise.all(waits), 2_000, 'the other waiter');
    await acquired[1]!.release();
  });

  it('gives the lock to the queue when a holder that died reaches the end of its lease, at most a heartbeat later', async () => {
    const name = uniqueName('fair');
    const holder = await child(name);
    holder.acquire('h', { leaseMs: 600 });
    const got = await within(holder.next('acquired', 'h'), 5_000, 'the holder');
    await holder.kill();
    const lease = await within(s.other.fairLock(name).acquire(), 3_000, 'the waiter after the dead holder lease');
    const stall = sharedNow() - (got.at + 600);
    reportStall('holder died (lease 600 ms): after the lease end', stall);
    assert.ok(stall > -50 && stall < H + SLACK, `acquired ${stall} ms after the dead holder's lease ended`);
    assert.ok(lease.fencingToken > got.token);
    await lease.release();
  });

  it('keeps the queue keys while waiters keep joining, none queued a heartbeat long: the joins renew them', async () => {
    // Three clients take turns: each waiter waits two short hand-offs, so no client has a waiter
    // queued for H and none heartbeats, and the queue never empties: only the joins keep its keys.
    const name = uniqueName('fair');
    const keys = fairKeys(name);
    const clients = [s.client, s.other, third];
    const join = (client: LockClient) => {
      const wait = client.fairLock(name).acquire();
      wait.catch(() => undefined);
      return wait;
    };
    let holder = await s.client.fairLock(name).acquire();
    const waits = [join(s.other)];
    await queued(s.f.admin, name, 1);
    waits.push(join(third));
    await queued(s.f.admin, name, 2);
    const until = performance.now() + 2 * D + 500;
    for (let turn = 0; performance.now() < until; turn++) {
      await sleep(40);
      const releasing = holder;
      await releasing.release();
      holder = await within(waits.shift()!, 2_000, `the head of the queue at turn ${turn}`);
      assert.ok(holder.fencingToken > releasing.fencingToken);
      const askedAt = performance.now();
      waits.push(join(clients[turn % 3]!));
      await queued(s.f.admin, name, 2);
      const [queueMs, deadlinesMs] = await Promise.all([s.f.admin.pttl(keys.queue), s.f.admin.pttl(keys.deadlines)]);
      // The keys outlive the new entry's deadline (its join's TIME + D), whatever heartbeats do.
      const leastMs = D - (performance.now() - askedAt) - 5;
      assert.ok(queueMs >= leastMs && deadlinesMs >= leastMs, `after the join of turn ${turn}, the queue keys have ${queueMs} and ${deadlinesMs} ms left (at least ${Math.round(leastMs)})`);
    }
    await holder.release();
    for (const wait of waits) await (await within(wait, 2_000, 'the last waiters')).release();
    assert.equal(await keysLeft(s.f.admin, name), []);
  });

  it('leaves no queue keys behind: a dead process\'s entries expire 2 D after its last heartbeat', async () => {
    const name = uniqueName('fair');
    const held = await s.client.fairLock(name).acquire({ leaseMs: 10_000 });
    const dead = await child(name);
    for (const id of ['a', 'b', 'c']) dead.acquire(id);
    await queued(s.f.admin, name, 3);
    await dead.kill();
    const killedAt = performance.now();
    const keys = fairKeys(name);
    assert.is(await s.f.admin.exists(keys.queue, keys.deadlines), 2);
    await eventually(async () => (await s.f.admin.exists(keys.queue, keys.deadlines)) === 0, 'the queue keys expire', 2 * D + 1_000);
    const lived = performance.now() - killedAt;
    reportStall('queue keys of a dead process gone after the kill', lived);
    assert.ok(lived <= 2 * D + SLACK, `queue keys lived ${lived} ms after their last waiter died`);
    await held.release();
    assert.equal(await keysLeft(s.f.admin, name), []);
  });
});
