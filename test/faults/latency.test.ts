// Fault 6: 20-50 ms of added latency per direction between every worker and Redis (order kept).
// Everything stays correct, only slower: no overlap, and no lease is lost for latency well under it.
import * as assert from 'uvu/assert';
import { describe } from '../helpers/describe.ts';
import { unexplainedLosses } from './checker.ts';
import { scenario, sized } from './harness.ts';

const leaseMs = 1_000;
const runMs = sized(4_000, 20_000);

describe('faults: added network latency', (it) => {
  it(
    'stays correct with 20-50 ms each way, only slower',
    async () => {
      const result = await scenario(
        { name: 'latency 20-50 ms per direction', leaseMs, proxied: 'all', limitMs: runMs + 60_000 },
        async (run) => {
          run.fault('latency 20-50 ms per direction');
          for (const proxy of run.proxies) proxy.delay({ minMs: 20, maxMs: 50 });
          await run.sleep(runMs);
          const seconds = runMs / 1000;
          run.notes.push(`throughput ${(run.entries().length / seconds).toFixed(1)}/s`);
        },
      );
      const { report } = result;
      assert.equal(report.problems, []);
      assert.is(report.overlaps.length, 0);
      assert.ok(report.acquisitions > 0, 'sections still complete');
      assert.equal(unexplainedLosses(result.entries, leaseMs), [], 'no lease is lost to latency far below the lease (or a stall of its worker)');
    },
    runMs + 90_000,
  );
});
