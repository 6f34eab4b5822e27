// No fault: six processes contend on one lock name as hard as they can. The baseline the fault
// scenarios are measured against, and most of the acquisitions of a full run.
import * as assert from 'uvu/assert';
import { describe } from '../helpers/describe.ts';
import { unexplainedLosses } from './checker.ts';
import { scenario, sized } from './harness.ts';

const runMs = sized(4_000, 40_000);

describe('faults: contention', (it) => {
  it(
    'lets one holder at a time through, under the watchdog and with fixed leases',
    async () => {
      const watchdog = await scenario({ name: 'contention (watchdog)', leaseMs: 1_000, limitMs: runMs + 60_000 }, async (run) => {
        await run.sleep(runMs / 2);
      });
      const fixed = await scenario(
        { name: 'contention (fixed lease)', leaseMs: 1_000, fixedLeaseMs: 1_000, limitMs: runMs + 60_000 },
        async (run) => {
          await run.sleep(runMs / 2);
        },
      );
      for (const result of [watchdog, fixed]) {
        const { report } = result;
        assert.equal(report.problems, []);
        assert.is(report.overlaps.length, 0);
        assert.ok(report.acquisitions > 0, 'some sections ran');
        assert.equal(unexplainedLosses(result.entries, 1_000), [], 'no lease is lost without a fault (or a stall of its worker)');
      }
    },
    2 * runMs + 130_000,
  );
});
