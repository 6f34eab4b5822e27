// The closing line of a fault run: the scenarios' figures summed, over every worker process of the
// run (test/run.ts runs this file last, alone).
import * as assert from 'uvu/assert';
import { describe } from '../helpers/describe.ts';
import { percent } from './checker.ts';
import { allResults, MODE } from './harness.ts';

/** What a full run (npm run test:faults) must reach over all scenarios. */
const FULL_ACQUISITIONS = 20_000;

describe('faults: total', (it) => {
  it('prints the total over every scenario of this run', () => {
    const results = allResults();
    if (results.length === 0) return;
    const sum = (pick: (r: (typeof results)[number]) => number) => results.reduce((total, r) => total + pick(r), 0);
    const max = (pick: (r: (typeof results)[number]) => number) => results.reduce((most, r) => Math.max(most, pick(r)), 0);
    const acquisitions = sum((r) => r.report.acquisitions);
    const overlaps = sum((r) => r.report.overlaps.length);
    // Per primitive: its runs, acquisitions, overlaps and the share overtaken by a later caller.
    const kinds = [...new Set(results.map((r) => r.kind))].map((kind) => {
      const runs = results.filter((r) => r.kind === kind);
      const of = (pick: (r: (typeof results)[number]) => number) => runs.reduce((total, r) => total + pick(r), 0);
      const judged = of((r) => r.report.fifoJudged);
      const overtaken = of((r) => r.report.overtaken.length);
      return [
        `${kind}: ${runs.length} runs, acquisitions ${of((r) => r.report.acquisitions)}`,
        `overlaps ${of((r) => r.report.overlaps.length)}`,
        `overtaken ${percent(judged === 0 ? 0 : overtaken / judged)} % (${overtaken} of ${judged})`,
      ].join(', ');
    });
    const line = [
      `[faults ${MODE}] total over ${results.length} scenario runs: acquisitions ${acquisitions}`,
      `overlaps ${overlaps}`,
      `faults injected ${sum((r) => r.faults.length)}`,
      `lost leases signalled ${sum((r) => r.report.lostLeases)}`,
      `longest wait ${Math.round(max((r) => r.report.longestWaitMs))} ms`,
      `longest stall after a fault ${Math.round(max((r) => r.report.longestStallMs))} ms`,
      `stale writes ${sum((r) => r.report.staleWrites)}`,
      `false losses ${sum((r) => r.report.falseLosses ?? 0)}`,
      `phantom holds ${sum((r) => r.report.phantomHolds ?? 0)}`,
      `${(sum((r) => r.durationMs) / 1000).toFixed(1)} s`,
      `(${kinds.join('; ')})`,
    ].join(', ');
    console.log(line);
    assert.is(overlaps, 0);
    // A full run of the whole suite (every scenario file) must have done real volume.
    if (MODE === 'full' && results.length >= 10) {
      assert.ok(acquisitions >= FULL_ACQUISITIONS, `a full run made ${acquisitions} acquisitions, fewer than ${FULL_ACQUISITIONS}`);
    }
  });
});
