// Leader election across processes (issue 36, point 1). Worker processes campaign in loops; a section
// is a term (campaign, a fenced read-modify-write with the epoch as its token, resign), judged by the
// lock's checker: never two leaders' sections at once, no stale write applied. The faults: a leader
// SIGKILLed (replaced within its lease plus one second), SIGSTOPped past its lease (fenced off by its
// epoch when it wakes), partitioned from Redis by a black hole (its signal aborts before its lease
// ends on Redis, so before another leads), subscribers killed, Redis restarted (epochs still go up).
// And observers in another process, through kills and pauses, see every term in order of epoch.
import * as assert from 'uvu/assert';
import { LockClient, type LeaderInfo } from '../../src/index.ts';
import { TEST_LAYOUT } from '../helpers/clients.ts';
import { applicableOnly, describe, within, type It } from '../helpers/describe.ts';
import { familyScenarios } from './family.ts';
import { MODE, scenario, sized } from './harness.ts';
import { partitionScenario } from './partition.ts';

const leaseMs = 1_000;

/** Collects what an observer yields until stopped. */
function observe(client: LockClient, name: string): { seen: (LeaderInfo | null)[]; stop(): Promise<void> } {
  const controller = new AbortController();
  const seen: (LeaderInfo | null)[] = [];
  const done = (async () => {
    for await (const state of client.leader(name).observe({ signal: controller.signal })) seen.push(state);
  })();
  return {
    seen,
    async stop() {
      controller.abort();
      await within(done, 2_000, 'the observer to end');
      await client.close();
    },
  };
}

describe('faults: leader election across processes', (all) => {
  // The Redisson layout refuses elections (the layout-redisson cell of the client matrix runs this file too).
  const it: It = Object.assign(applicableOnly(all, TEST_LAYOUT !== 'redisson', "relock's layout (the Redisson layout refuses leader())"), { before: all.before, after: all.after });
  familyScenarios(it, { kind: 'leader', label: 'leader', options: {}, staleLateWrite: true, releaseAfterLoss: 'ok', recoverWithinMs: leaseMs + 1_000 });
  partitionScenario(it, 'leader', 'leader', 'ok');

  it(
    'leader: observers in another process see every term, in order of epoch, through kills and pauses',
    async () => {
      const rounds = sized(1, 4);
      let observers: ReturnType<typeof observe>[] = [];
      /** When both observers had shown their first state: every term begun after it must be seen. */
      let from = Number.POSITIVE_INFINITY;
      const result = await scenario({ name: 'leader: observers through kills and pauses', kind: 'leader', leaseMs, workers: 3, maxAwaitMs: 20, limitMs: 40_000 + rounds * 10_000 }, async (run) => {
        const { prefix, name } = run.lockName;
        observers = [0, 1].map(() => observe(new LockClient({ redis: run.lockServer.url, prefix, leaseMs }), name));
        await run.until(async () => observers.every((observer) => observer.seen.length > 0), 'the observers started', 5_000);
        from = run.now();
        await run.sleep(500);
        for (let i = 0; i < rounds; i++) {
          const killed = run.live[0]!;
          await run.hold(killed);
          const killedAt = run.kill(killed);
          await run.nextStart(killedAt, leaseMs + 10_000);
          await run.spawn();
          const paused = run.live[0]!;
          const held = await run.hold(paused, { untilLost: true });
          const stoppedAt = run.pause(paused);
          await run.nextStart(stoppedAt + leaseMs + 100, leaseMs + 10_000);
          run.resume(paused);
          await run.released(paused, held.token, 10_000);
          await run.sleep(300);
        }
      });
      // The last resignations' messages, then the observers stop.
      await new Promise((resolve) => setTimeout(resolve, 300));
      for (const observer of observers) await observer.stop();
      const { report, entries } = result;
      assert.equal(report.problems, []);
      assert.is(report.overlaps.length, 0);
      const terms = [...new Set(entries.filter((entry) => entry.start > from).map((entry) => entry.token))].sort((a, b) => a - b);
      assert.ok(terms.length > 10, `${terms.length} terms`);
      for (const [i, observer] of observers.entries()) {
        const epochs = observer.seen.filter((state): state is LeaderInfo => state !== null).map((state) => state.epoch);
        for (let k = 1; k < epochs.length; k++) assert.ok(epochs[k]! > epochs[k - 1]!, `observer ${i}: epoch ${epochs[k]} after ${epochs[k - 1]}`);
        for (let k = 1; k < observer.seen.length; k++) assert.ok(observer.seen[k] !== null || observer.seen[k - 1] !== null, `observer ${i}: null twice in a row at ${k}`);
        const seen = new Set(epochs);
        const missed = terms.filter((epoch) => !seen.has(epoch));
        assert.equal(missed, [], `observer ${i} saw every term of the workers' (${terms.length})`);
        assert.is(observer.seen.at(-1), null, `observer ${i} ends with nobody leading`);
      }
    },
    90_000 + sized(1, 4) * 15_000,
  );

  if (MODE === 'full') {
    it(
      "leader: the negative control (signal ignored, the term's key deleted behind it) is caught by the checker",
      async () => {
        console.log("  expected: these leader workers ignore their signal on purpose; the checker must catch what is printed below as \"caught (negative control)\"");
        const { report } = await scenario(
          { workers: 3, name: 'leader negative control (signal ignored, key deleted)', kind: 'leader', leaseMs, maxAwaitMs: 600, blind: true, limitMs: 45_000 },
          async (run) => {
            const until = run.now() + 3_000;
            while (run.now() < until) {
              await run.sleep(50);
              await run.admin.del(run.lockKey);
            }
          },
        );
        assert.ok(report.overlaps.length > 0, 'the checker reports two leaders at once');
      },
      60_000,
    );
  }
});
