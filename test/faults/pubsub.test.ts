// Fault 3: the subscriber connections are killed (CLIENT KILL TYPE pubsub) again and again under
// load. Releases published while a subscriber reconnects are lost; waiters must still get the lock,
// none waiting longer than one lease.
import * as assert from 'uvu/assert';
import { describe } from '../helpers/describe.ts';
import { scenario, sized } from './harness.ts';

const leaseMs = 2_000;
const runMs = sized(4_000, 30_000);

describe('faults: pub/sub connection killed under load', (it) => {
  it(
    'wakes every waiter within one lease, with zero overlaps',
    async () => {
      let killed = 0;
      const { report } = await scenario({ name: 'CLIENT KILL TYPE pubsub', leaseMs, limitMs: runMs + 40_000 }, async (run) => {
        const until = run.now() + runMs;
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
      assert.ok(report.longestWaitMs <= leaseMs, `the longest wait was ${Math.round(report.longestWaitMs)} ms (bound: one lease, ${leaseMs} ms)`);
    },
    runMs + 60_000,
  );
});
