// Fault 1: a holder is SIGKILLed. Its lease is never released; the others go on once it expires.
import * as assert from 'uvu/assert';
import { describe } from '../helpers/describe.ts';
import { scenario, sized } from './harness.ts';

const leaseMs = 1_000;
const kills = sized(2, 8);
const boundMs = leaseMs + 500;

describe('faults: SIGKILL of a holder', (it) => {
  it(
    'lets the others go on within lease + 500 ms, with zero overlaps',
    async () => {
      const recoveries: number[] = [];
      const { report } = await scenario({ name: 'SIGKILL holder', leaseMs, limitMs: 30_000 + kills * 6_000 }, async (run) => {
        await run.sleep(300);
        for (let i = 0; i < kills; i++) {
          const victim = run.live[i % run.live.length]!;
          const held = await run.hold(victim);
          const killedAt = run.kill(victim);
          const next = await run.nextStart(killedAt, leaseMs + 10_000, held.token);
          recoveries.push(next.start - killedAt);
          // A new process takes the dead one's place, so that six keep contending.
          await run.spawn();
          await run.sleep(200);
        }
        run.notes.push(`recovery after kill max ${Math.round(Math.max(...recoveries))} ms (bound ${boundMs} ms)`);
      });
      assert.equal(report.problems, []);
      assert.is(report.overlaps.length, 0);
      assert.is(recoveries.length, kills);
      for (const ms of recoveries) assert.ok(ms <= boundMs, `the others went on ${Math.round(ms)} ms after the kill (bound ${boundMs} ms)`);
    },
    60_000 + kills * 6_000,
  );
});
