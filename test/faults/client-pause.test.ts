// Fault 7: CLIENT PAUSE of Redis for longer than a renewal interval (leaseMs / 3). A pause shorter
// than the lease (and its renewal slack) is ridden out: no false loss. A pause longer than the lease
// is a loss, and it is signalled; nobody else gets the lock until the pause ends and the lease is over.
import * as assert from 'uvu/assert';
import type { Redis } from 'ioredis';
import { describe } from '../helpers/describe.ts';
import type { Entry } from './protocol.ts';
import { unexplainedLosses } from './checker.ts';
import { scenario, sized } from './harness.ts';

const leaseMs = 2_000;
const renewalMs = Math.round(leaseMs / 3);
// Longer than a renewal interval, and short enough that the renewal sent during the pause comes back
// before the deadline of the one before it: leaseMs - leaseMs / 10 - leaseMs / 3 = 1133 ms.
const shortPauseMs = 800;
const longPauseMs = 3_000;
const pauses = sized(2, 6);

/** CLIENT PAUSE of every command; Redis 6.0 (the server matrix's) has no mode argument, and pauses all. */
const pauseAll = (admin: Redis, ms: number) => (process.env.RELOCK_SERVER === 'redis-6.0' ? admin.call('CLIENT', 'PAUSE', ms) : admin.client('PAUSE', ms, 'ALL'));

describe('faults: CLIENT PAUSE of Redis', (it) => {
  it(
    `rides out pauses of ${shortPauseMs} ms (over the ${renewalMs} ms renewal interval) without a false loss`,
    async () => {
      const held: Entry[] = [];
      const result = await scenario(
        { name: `CLIENT PAUSE ${shortPauseMs} ms (< lease)`, leaseMs, limitMs: 30_000 + pauses * 8_000 },
        async (run) => {
          await run.sleep(300);
          for (let i = 0; i < pauses; i++) {
            const victim = run.live[i % run.live.length]!;
            const section = await run.hold(victim, { untilLost: false, ms: shortPauseMs + 2 * renewalMs });
            // Let a renewal land first at a random point of its interval, then pause.
            await run.sleep(Math.random() * renewalMs);
            run.fault(`CLIENT PAUSE ${shortPauseMs}`);
            await pauseAll(run.admin, shortPauseMs);
            held.push(await run.released(victim, section.token, 15_000));
          }
        },
      );
      const { report } = result;
      assert.equal(report.problems, []);
      assert.is(report.overlaps.length, 0);
      assert.equal(unexplainedLosses(result.entries, leaseMs), [], 'no lease is signalled lost (but for a stall of its worker)');
      for (const section of held) {
        assert.is(section.lostAt, null);
        assert.is(section.write, 'ok');
        assert.is(section.release, 'ok');
      }
    },
    60_000 + pauses * 8_000,
  );

  it(
    `signals the loss when a pause of ${longPauseMs} ms outlasts the ${leaseMs} ms lease`,
    async () => {
      const lost: { section: Entry; pausedAt: number; resumedAt: number; next: number }[] = [];
      const { report } = await scenario(
        { name: `CLIENT PAUSE ${longPauseMs} ms (> lease)`, leaseMs, limitMs: 30_000 + pauses * 10_000 },
        async (run) => {
          await run.sleep(300);
          for (let i = 0; i < pauses; i++) {
            const victim = run.live[i % run.live.length]!;
            const section = await run.hold(victim, { untilLost: true });
            const pausedAt = run.fault(`CLIENT PAUSE ${longPauseMs}`);
            await pauseAll(run.admin, longPauseMs);
            const signalled = await run.lost(victim, section.token, longPauseMs + 5_000);
            const next = await run.nextStart(pausedAt, longPauseMs + leaseMs + 10_000, section.token);
            lost.push({ section: signalled, pausedAt, resumedAt: pausedAt + longPauseMs, next: next.start });
            await run.released(victim, section.token, 15_000);
          }
        },
      );
      assert.equal(report.problems, []);
      assert.is(report.overlaps.length, 0);
      for (const { section, pausedAt, resumedAt, next } of lost) {
        assert.is(section.lostCode, 'ERR_LOCK_LOST');
        assert.ok(section.lostAt! < resumedAt, 'the loss is signalled during the pause, before Redis answers again');
        assert.ok(section.lostAt! - pausedAt <= leaseMs, 'within one lease of the pause');
        assert.ok(next > resumedAt - 50, 'nobody else gets the lock during the pause');
      }
    },
    60_000 + pauses * 10_000,
  );
});
