// The negative control: the same harness and checker, with workers that ignore lease.signal (as if
// relock never told a holder it lost its lease) on a fixed lease shorter than their sections. Real
// processes then overlap, and the checker must say so. A checker that passes this has proven nothing.
import * as assert from 'uvu/assert';
import { describe } from '../helpers/describe.ts';
import { scenario } from './harness.ts';

describe('faults: negative control', (it) => {
  it(
    'reports overlaps and lost updates when holders ignore their lost leases',
    async () => {
      console.log(
        '  expected: these workers ignore lease.signal on purpose; the checker must catch the overlaps printed below as "caught (negative control)", and this test fails if it does not',
      );
      const { report } = await scenario(
        { name: 'negative control (signal ignored, 5 ms lease)', workers: 3, leaseMs: 1_000, fixedLeaseMs: 5, maxAwaitMs: 15, blind: true, limitMs: 45_000 },
        async (run) => {
          await run.sleep(1_500);
        },
      );
      assert.ok(report.overlaps.length > 0, 'the checker reports overlapping holds');
      assert.ok(
        report.problems.some((p) => /counter is|did not read the previous write|unsignalled stale writes/.test(p)),
        `the checker reports the damage to the counter: ${report.problems.join('; ')}`,
      );
    },
    60_000,
  );
});
