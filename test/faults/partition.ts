// Fault 5, written once for every kind it applies to (the lock: partition.test.ts; the leader:
// leader.test.ts): a network partition between one holder and Redis (its proxy black-holes every
// byte). The watchdog cannot renew; the signal aborts before the lease ends on Redis; the others
// acquire only after that. When the partition heals, the late release finds the hold gone.
import * as assert from 'uvu/assert';
import type { It } from '../helpers/describe.ts';
import type { Entry, LockKind } from './protocol.ts';
import { scenario, sized } from './harness.ts';

const leaseMs = 2_000;
const partitions = sized(2, 8);

interface Observed {
  readonly lost: Entry;
  readonly released: Entry;
  /** How long before the lease ended on Redis the signal aborted. */
  readonly aheadMs: number;
  readonly nextStart: number;
}

/**
 * The partition scenario of `kind`; `releaseAfterLoss` is what its late release gives (a lease's
 * release() rejects with ERR_LOCK_NOT_HELD; a leadership's resign() resolves: 'ok').
 */
export function partitionScenario(it: It, kind: LockKind, label: string, releaseAfterLoss: string): void {
  it(
    `${label}: aborts the signal before the lease ends on Redis, and hands over after it`,
    async () => {
      const observed: Observed[] = [];
      const { report } = await scenario(
        { name: `${label}: partition (black hole)`, kind, leaseMs, proxied: 'all', limitMs: 30_000 + partitions * 10_000 },
        async (run) => {
          await run.sleep(300);
          for (let i = 0; i < partitions; i++) {
            const victim = run.live[i % run.live.length]!;
            const held = await run.hold(victim, { untilLost: true });
            const at = run.fault('partition', victim);
            run.proxy(victim).blackhole();
            const pttl = await run.admin.pttl(run.lockKey);
            const leaseEnd = at + pttl;
            const lost = await run.lost(victim, held.token, leaseMs + 5_000);
            const next = await run.nextStart(at, leaseMs + 10_000, held.token);
            // Heal: by letting the held bytes through, or (every other time) by resetting the
            // connections, as a partition that outlived the TCP timeout would.
            if (i % 2 === 0) run.proxy(victim).pass();
            else {
              run.proxy(victim).cut();
              run.proxy(victim).pass();
            }
            const released = await run.released(victim, held.token, 20_000);
            observed.push({ lost, released, aheadMs: leaseEnd - lost.lostAt!, nextStart: next.start });
          }
          run.notes.push(`signal ahead of the lease end on Redis min ${Math.round(Math.min(...observed.map((o) => o.aheadMs)))} ms`);
        },
      );
      assert.equal(report.problems, []);
      assert.is(report.overlaps.length, 0);
      assert.is(observed.length, partitions);
      for (const o of observed) {
        assert.is(o.lost.lostCode, 'ERR_LOCK_LOST');
        assert.ok(o.aheadMs > 0, `lease.signal aborted ${Math.round(-o.aheadMs)} ms after the lease ended on Redis`);
        assert.ok(o.nextStart > o.lost.lostAt!, 'the others acquire after the signal aborted');
        assert.is(o.released.write, 'none', 'the partitioned holder stops writing');
        assert.is(o.released.release, releaseAfterLoss, 'its late release finds the hold gone, however the partition healed');
      }
    },
    60_000 + partitions * 10_000,
  );
}
