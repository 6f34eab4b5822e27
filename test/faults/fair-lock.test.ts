// The fault scenarios against the fair lock (client.fairLock): fault-free contention with the FIFO
// bound, SIGKILL and SIGSTOP of a holder and of a waiter, subscriber connections killed, and Redis
// restarted, each with zero overlaps. The waiter faults are the fair lock's own: a waiter is an
// entry of the Redis queue, and a dead one must be skipped at once, a frozen one within the bound
// of docs/fair-lock.md (D + C + H), both without letting two holders in.
import * as assert from 'uvu/assert';
import { FAIR_SETTINGS } from '../../src/fair-lock/settings.ts';
import { TEST_LAYOUT } from '../helpers/clients.ts';
import { applicableOnly, describe } from '../helpers/describe.ts';
import { percent, unexplainedLosses } from './checker.ts';
import type { Entry } from './protocol.ts';
import { FAIR_MAX_OVERTAKEN_SHARE, MODE, scenario, sized, type Run } from './harness.ts';

const kind = 'fair-lock';
const leaseMs = 1_000;
const loops = 2;
const { claimMs, heartbeatMs, deadlineMs } = FAIR_SETTINGS;
/** A dead waiter costs one hand-off: a stall as long as a claim means it was granted instead. */
const deadWaiterBoundMs = claimMs - 100;
/** The contract: a frozen waiter stalls the queue under 2 s, whatever its entries (D + C + H = 1.7 s). */
const frozenWaiterBoundMs = 2_000;
assert.ok(deadlineMs + claimMs + heartbeatMs < frozenWaiterBoundMs, 'the settings keep the documented bound');
/**
 * A holder paused past its lease: the lease runs out unannounced, the next heartbeat pumps the lock
 * (H); the paused process's other loop, frozen in the queue too, may be the head then and cost its
 * claim and another heartbeat (C + H) before its entry's deadline drops it.
 */
const pausedHolderBoundMs = leaseMs + claimMs + 2 * heartbeatMs + 100;
/** How long the holder keeps the lock at least while the others queue behind it, before a waiter is hit. */
const queueHoldMs = 400;

/** The longest time the lock stood free between sections that began from `from` on (token order). */
function longestIdle(entries: readonly Entry[], from: number): number {
  const sections = entries.filter((e) => e.start >= from).sort((a, b) => a.token - b.token);
  let idle = 0;
  for (let i = 1; i < sections.length; i++) idle = Math.max(idle, sections[i]!.start - sections[i - 1]!.end);
  return idle;
}

/**
 * Has worker `holder` hold the lock while every other loop queues behind it; resolves with the held
 * section and the worker of the first queue entry that is not the holder's (the waiter to hit). The
 * holder keeps the lock until `hit` (which faults the waiter) has resolved and queueHoldMs have
 * passed: under load the queue can take longer to fill than a fixed hold, and a waiter hit after the
 * release was granted the lock alive (a dead grantee costs a claim, which is not what is measured).
 */
async function queueBehind(
  run: Run,
  holder: number,
  hit: (head: number) => Promise<unknown>,
  /** The workers that may be hit (default: any): a worker still starting may not, its start would fail the run. */
  started?: readonly number[],
): Promise<{ held: Entry; head: number }> {
  const held = await run.hold(holder, { untilLost: false, untilTold: true });
  const full = run.live.length * loops - 1;
  let queue: number[] = [];
  // Every loop re-joins at once: the queue fills within a few ms; take what is there after 200.
  for (const until = run.now() + 200; run.now() < until; await run.sleep(10)) {
    queue = await run.queue();
    if (queue.length >= full) break;
  }
  const head = queue.find((w) => w !== holder && w >= 0 && (!started || started.includes(w)));
  if (head === undefined) throw new Error(`${run.name}: no waiter queued behind worker ${holder} (queue ${JSON.stringify(queue)})`);
  await hit(head);
  await run.sleep(Math.max(0, held.start + queueHoldMs - run.now()));
  run.endHold(holder);
  return { held, head };
}

/**
 * Resolves once every worker of `among` still alive began a section after `at`: the queue moved past.
 * Only workers that were running before `at` count: one still starting (a replacement spawned on a
 * loaded machine can take seconds) cannot have queued.
 */
function everyoneServedAfter(run: Run, at: number, among: readonly number[]): Promise<true> {
  return run.until(
    () => among.filter((w) => run.live.includes(w)).every((w) => run.entries().some((e) => e.worker === w && e.start > at)),
    `every other worker acquires after ${at.toFixed(0)}`,
    10_000,
  );
}

describe('faults: fair lock', (it) => {
  // The Redisson layout's fair lock is RFairLock's protocol: no heartbeats, so a killed or frozen
  // waiter holds the queue up until its deadline (docs/redisson.md); those bounds are relock's own.
  const heartbeats = applicableOnly(it, TEST_LAYOUT !== 'redisson', "relock's fair-lock heartbeats (RFairLock keeps a dead waiter until its deadline)");
  const contentionMs = sized(2_000, 20_000);
  it(
    `serves callers in order under contention: at most ${percent(FAIR_MAX_OVERTAKEN_SHARE)} % overtaken, zero overlaps`,
    async () => {
      const runs = [
        await scenario({ name: 'fair-lock contention (watchdog)', kind, leaseMs, limitMs: contentionMs + 60_000 }, (run) => run.sleep(contentionMs)),
      ];
      if (MODE === 'full') {
        runs.push(
          await scenario({ name: 'fair-lock contention (fixed lease)', kind, leaseMs, fixedLeaseMs: leaseMs, limitMs: contentionMs + 60_000 }, (run) =>
            run.sleep(contentionMs),
          ),
        );
      }
      for (const result of runs) {
        const { report } = result;
        assert.equal(report.problems, []);
        assert.is(report.overlaps.length, 0);
        assert.ok(report.acquisitions > 0, 'some sections ran');
        assert.equal(unexplainedLosses(result.entries, leaseMs), [], 'no lease is lost without a fault (or a stall of its worker)');
        assert.ok(
          report.overtakenShare <= FAIR_MAX_OVERTAKEN_SHARE,
          `${report.overtaken.length} of ${report.fifoJudged} acquisitions overtaken by a later caller`,
        );
      }
    },
    2 * contentionMs + 130_000,
  );

  const kills = sized(1, 6);
  heartbeats(
    `goes on after a killed holder within lease + 500 ms, and skips a killed waiter at once (under ${deadWaiterBoundMs} ms)`,
    async () => {
      const recoveries: number[] = [];
      const skips: number[] = [];
      const { report } = await scenario({ name: 'fair-lock SIGKILL holder and waiter', kind, workers: 4, leaseMs, limitMs: 40_000 + kills * 8_000 }, async (run) => {
        await run.sleep(300);
        for (let i = 0; i < kills; i++) {
          // The holder: its lease expires unannounced; a heartbeat or a join pumps the lock to the head.
          const victim = run.live[i % run.live.length]!;
          const held = await run.hold(victim);
          const killedAt = run.kill(victim);
          recoveries.push((await run.nextStart(killedAt, leaseMs + 10_000, held.token)).start - killedAt);
          // A new process takes the dead one's place (it starts while the waiter below is hit).
          const running = run.live;
          const replacing = run.spawn();
          // A waiter at the head of the queue: the release's PUBLISH reaches nobody, the next is tried.
          // Dead before the release: its process exited (Redis sees its sockets close) 50 ms before.
          const { held: holding } = await queueBehind(
            run,
            running[i % running.length]!,
            async (head) => {
              run.kill(head, 'waiter');
              await run.exited(head);
              await run.sleep(50);
            },
            running, // the new process may queue before its start is told: hitting it would fail its spawn
          );
          const released = await run.released(holding.worker, holding.token, queueHoldMs + 10_000);
          await everyoneServedAfter(run, released.end, running.filter((w) => w !== holding.worker));
          skips.push(longestIdle(run.entries(), holding.start));
          await replacing;
          if (i < kills - 1) await run.spawn();
        }
        run.notes.push(`recovery after a killed holder max ${Math.round(Math.max(...recoveries))} ms (bound ${leaseMs + 500} ms)`);
        run.notes.push(`longest idle past a killed waiter ${Math.round(Math.max(...skips))} ms (bound ${deadWaiterBoundMs} ms)`);
      });
      assert.equal(report.problems, []);
      assert.is(report.overlaps.length, 0);
      assert.is(recoveries.length, kills);
      for (const ms of recoveries) assert.ok(ms <= leaseMs + 500, `the others went on ${Math.round(ms)} ms after the holder's kill (bound ${leaseMs + 500} ms)`);
      for (const ms of skips) assert.ok(ms < deadWaiterBoundMs, `the lock stood free ${Math.round(ms)} ms past a killed waiter (bound ${deadWaiterBoundMs} ms)`);
    },
    70_000 + kills * 8_000,
  );

  const pauses = sized(1, 4);
  heartbeats(
    `fences off a holder paused past its lease, and passes a frozen waiter by within ${frozenWaiterBoundMs} ms`,
    async () => {
      const paused: Entry[] = [];
      const handovers: { afterLeaseMs: number; stallMs: number }[] = [];
      const frozen: number[] = [];
      const { report } = await scenario({ name: 'fair-lock SIGSTOP holder and waiter', kind, workers: 4, leaseMs, limitMs: 40_000 + pauses * 12_000 }, async (run) => {
        await run.sleep(300);
        for (let i = 0; i < pauses; i++) {
          // The holder, past its lease: as pause.test.ts.
          const victim = run.live[i % run.live.length]!;
          const held = await run.hold(victim, { untilLost: true, lateWrite: true });
          const stoppedAt = run.pause(victim);
          const leaseEnd = stoppedAt + (await run.admin.pttl(run.lockKey));
          const next = await run.nextStart(stoppedAt, leaseMs + 10_000, held.token);
          handovers.push({ afterLeaseMs: next.start - leaseEnd, stallMs: next.start - stoppedAt });
          await run.until(async () => (await run.highestWritten()) > held.token, 'a later holder writes', 10_000);
          run.resume(victim);
          paused.push(await run.released(victim, held.token, 10_000));
          // A waiter at the head of the queue, frozen with its sockets open: it is granted, never
          // confirms; its claim expires and a heartbeat pumps the lock on (C + H per entry, at most
          // D + C + H). Resumed, it confirms its stale grant, finds it gone and queues again.
          const { held: holding, head } = await queueBehind(run, run.live[(i + 1) % run.live.length]!, async (waiter) => run.pause(waiter, 'waiter'));
          const released = await run.released(holding.worker, holding.token, queueHoldMs + 10_000);
          await everyoneServedAfter(run, released.end, run.live.filter((w) => w !== holding.worker && w !== head));
          frozen.push(longestIdle(run.entries(), holding.start));
          const resumedAt = run.resume(head);
          await run.until(() => run.entries().some((e) => e.worker === head && e.start > resumedAt), 'the resumed waiter acquires again', 10_000);
        }
        run.notes.push(`handover after the holder's lease end on Redis +${Math.round(Math.min(...handovers.map((h) => h.afterLeaseMs)))} ms or later`);
        run.notes.push(`after the pause at most ${Math.round(Math.max(...handovers.map((h) => h.stallMs)))} ms (bound ${pausedHolderBoundMs} ms)`);
        run.notes.push(`longest idle past a frozen waiter ${Math.round(Math.max(...frozen))} ms (bound ${frozenWaiterBoundMs} ms)`);
      });
      assert.equal(report.problems, []);
      assert.is(report.overlaps.length, 0);
      assert.is(paused.length, pauses);
      for (const section of paused) {
        assert.is(section.lostCode, 'ERR_LOCK_LOST', 'the paused holder finds lease.signal aborted with LockLostError');
        assert.is(section.release, 'ERR_LOCK_NOT_HELD', 'its release() rejects with LockNotHeldError');
        assert.is(section.late?.write, 'stale', 'its late write carries a stale token');
      }
      assert.ok(report.staleWrites >= pauses, 'the checker sees the late writes as stale');
      for (const h of handovers) {
        assert.ok(h.afterLeaseMs >= -20, `another acquired ${Math.round(-h.afterLeaseMs)} ms before the lease ended on Redis`);
        assert.ok(h.stallMs <= pausedHolderBoundMs, `the lock was handed over ${Math.round(h.stallMs)} ms after the pause (bound ${pausedHolderBoundMs} ms)`);
      }
      for (const ms of frozen) assert.ok(ms <= frozenWaiterBoundMs, `the lock stood free ${Math.round(ms)} ms past a frozen waiter (bound ${frozenWaiterBoundMs} ms)`);
      // The stall a frozen head costs is its claim at least (it was granted, never confirmed).
      assert.ok(Math.max(...frozen) >= claimMs - 50, `the frozen waiter was granted the lock (longest idle ${Math.round(Math.max(...frozen))} ms)`);
    },
    70_000 + pauses * 12_000,
  );

  const pubsubMs = sized(2_000, 30_000);
  it(
    'serves every waiter while subscriber connections are killed again and again, with zero overlaps',
    async () => {
      let killed = 0;
      const pubsubLeaseMs = 2_000;
      const { report } = await scenario({ name: 'fair-lock CLIENT KILL TYPE pubsub', kind, workers: 4, leaseMs: pubsubLeaseMs, limitMs: pubsubMs + 40_000 }, async (run) => {
        const until = run.now() + pubsubMs;
        while (run.now() < until) {
          await run.sleep(150 + Math.random() * 250);
          run.fault('CLIENT KILL TYPE pubsub');
          killed += Number(await run.admin.client('KILL', 'TYPE', 'PUBSUB'));
        }
        run.notes.push(`subscriber connections killed ${killed}`);
      });
      assert.equal(report.problems, []);
      assert.is(report.overlaps.length, 0);
      assert.ok(killed > 0, 'some subscriber connections were killed');
      // A waiter whose subscriber is down at its turn loses its place and re-joins at the tail.
      assert.ok(report.longestWaitMs <= pubsubLeaseMs, `the longest wait was ${Math.round(report.longestWaitMs)} ms (bound ${pubsubLeaseMs} ms)`);
    },
    pubsubMs + 60_000,
  );

  const restarts = sized(1, 3);
  it(
    'reconnects every worker after a Redis restart, and tells the holder its lease is lost',
    async () => {
      const slow: Entry[] = [];
      const quick: Entry[] = [];
      const { report } = await scenario({ name: 'fair-lock Redis restart (SHUTDOWN NOSAVE)', kind, workers: 4, leaseMs, limitMs: 30_000 + restarts * 30_000 }, async (run) => {
        await run.sleep(300);
        for (let i = 0; i < restarts; i++) {
          // The queue is gone with the lock state: each waiter's heartbeat re-joins it.
          slow.push((await run.restartWhileHeld(Math.round(1.5 * leaseMs))).lost);
          await run.sleep(200);
          quick.push((await run.restartWhileHeld(0)).lost);
          await run.sleep(200);
        }
      });
      assert.equal(report.problems, []);
      assert.is(report.overlaps.length, 0);
      for (const section of [...slow, ...quick]) {
        assert.is(section.lostCode, 'ERR_LOCK_LOST', `the holder learns its lease is lost (${JSON.stringify(section)})`);
        assert.is(section.write, 'none', 'the holder stops writing once its signal aborted');
      }
      for (const section of quick) assert.is(section.release, 'ERR_LOCK_NOT_HELD', 'its release() rejects with LockNotHeldError');
      for (const section of slow) assert.ok(['ERR_LOCK_NOT_HELD', 'ERR_LOCK_UNREACHABLE'].includes(section.release!), `release: ${section.release}`);
    },
    60_000 + restarts * 30_000,
  );
});
