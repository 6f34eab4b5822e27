// Fault 2: a holder is SIGSTOPped past its lease (a stop-the-world GC pause), then SIGCONTinued.
// Another acquires after the lease; the paused one finds lease.signal aborted with LockLostError,
// its release() rejects with LockNotHeldError, and its late write carries a stale token that the
// fence rejects (the checker counts it as stale, not as an overlap).
import * as assert from 'uvu/assert';
import { describe } from '../helpers/describe.ts';
import type { Entry } from './protocol.ts';
import { scenario, sized } from './harness.ts';

const leaseMs = 1_000;
const pauses = sized(1, 6);

describe('faults: SIGSTOP of a holder past its lease', (it) => {
  it(
    'hands the lock over after the lease and fences the paused holder off',
    async () => {
      const paused: Entry[] = [];
      const handovers: { afterLeaseMs: number; stallMs: number }[] = [];
      const { report } = await scenario({ name: 'SIGSTOP holder past its lease', leaseMs, limitMs: 30_000 + pauses * 8_000 }, async (run) => {
        await run.sleep(300);
        for (let i = 0; i < pauses; i++) {
          const victim = run.live[i % run.live.length]!;
          const held = await run.hold(victim, { untilLost: true, lateWrite: true });
          const stoppedAt = run.pause(victim);
          // Where the lease ends on Redis, seen from here.
          const pttl = await run.admin.pttl(run.lockKey);
          const leaseEnd = stoppedAt + pttl;
          const next = await run.nextStart(stoppedAt, leaseMs + 10_000, held.token);
          handovers.push({ afterLeaseMs: next.start - leaseEnd, stallMs: next.start - stoppedAt });
          // Stay stopped until a later holder has written: the late write is then certainly stale.
          await run.until(async () => (await run.highestWritten()) > held.token, 'a later holder writes', 10_000);
          run.resume(victim);
          paused.push(await run.released(victim, held.token, 10_000));
        }
        run.notes.push(`handover after the lease end on Redis +${Math.round(Math.min(...handovers.map((h) => h.afterLeaseMs)))} ms or later`);
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
      assert.ok(report.lostLeases >= pauses);
      for (const h of handovers) {
        // PTTL was read just after the SIGSTOP, so the true lease end is at most a few ms earlier.
        assert.ok(h.afterLeaseMs >= -20, `another acquired ${Math.round(-h.afterLeaseMs)} ms before the lease ended on Redis`);
        assert.ok(h.stallMs <= leaseMs + 500, `the lock was handed over ${Math.round(h.stallMs)} ms after the pause (bound ${leaseMs + 500} ms)`);
      }
    },
    60_000 + pauses * 8_000,
  );
});
