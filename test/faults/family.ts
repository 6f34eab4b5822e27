// The fault scenarios of the family (semaphore, read-write lock, multi-lock), written once: SIGKILL
// of a holder, SIGSTOP of a holder past its lease, subscriber connections killed, Redis restarted.
// In short mode (npm test) one run per primitive goes through all four, so that the workers start
// once; in full mode each fault gets its own run, repeated. The kind's checker (checker.ts) judges.
import * as assert from 'uvu/assert';
import type { It } from '../helpers/describe.ts';
import { peak } from './checker.ts';
import type { Entry, LockKind } from './protocol.ts';
import { MODE, scenario, sized, type Result, type Run, type ScenarioOptions } from './harness.ts';

export interface FamilySpec {
  readonly kind: LockKind;
  /** How the summary lines name the primitive. */
  readonly label: string;
  /** The kind's own options (permits, readRatio, members) and the load. */
  readonly options: Partial<ScenarioOptions>;
  /** The side a held section takes (the read-write lock's writer, whom everyone waits for). */
  readonly holdMode?: 'read' | 'write';
  /** The paused holder's late write goes through a fence that must reject it (false: nothing to fence, or not always). */
  readonly staleLateWrite: boolean;
  /** What the paused holder's late release gives: a lease's rejects with ERR_LOCK_NOT_HELD (the default), a leadership's resign() resolves ('ok'). */
  readonly releaseAfterLoss?: string;
  /** How soon after a SIGKILL of a holder another must have begun. @default twice the lease + 500 ms */
  readonly recoverWithinMs?: number;
  /** The negative control's load (full mode): a fixed lease and sections longer than it. Absent: no negative control here (the kind's test file has its own). */
  readonly negative?: { readonly fixedLeaseMs: number; readonly maxAwaitMs: number } | undefined;
}

const leaseMs = 1_000;
/** The family's negative control: a 5 ms fixed lease, sections up to 15 ms. */
export const NEGATIVE = { fixedLeaseMs: 5, maxAwaitMs: 15 } as const;

type Step = (run: Run, spec: FamilySpec, checks: Checks) => Promise<void>;

/** What the steps saw, asserted after the run. */
interface Checks {
  paused: Entry[];
  restarted: Entry[];
  recoveries: number[];
  pubsubKilled: number;
}

/** SIGKILL of a holder; the others go on. */
function kill(times: number): Step {
  return async (run, spec, checks) => {
    for (let i = 0; i < times; i++) {
      const victim = run.live[i % run.live.length]!;
      await run.hold(victim, spec.holdMode ? { mode: spec.holdMode } : {});
      const killedAt = run.kill(victim);
      const next = await run.nextStart(killedAt, leaseMs + 10_000);
      checks.recoveries.push(next.start - killedAt);
      // And one that began once the dead holder's lease was surely over: the primitive went on.
      await run.nextStart(killedAt + leaseMs + 100, leaseMs + 10_000);
      // In full mode a new process takes the dead one's place; a short run goes on with one fewer.
      if (MODE === 'full') await run.spawn();
    }
  };
}

/** SIGSTOP of a holder until a later section began past its lease (and, to fence, a later holder wrote). */
function pause(times: number): Step {
  return async (run, spec, checks) => {
    for (let i = 0; i < times; i++) {
      const victim = run.live[i % run.live.length]!;
      const held = await run.hold(victim, { untilLost: true, lateWrite: true, ...(spec.holdMode ? { mode: spec.holdMode } : {}) });
      const stoppedAt = run.pause(victim);
      await run.nextStart(stoppedAt + leaseMs + 100, leaseMs + 10_000);
      if (spec.staleLateWrite) await run.until(async () => (await run.highestWritten()) > held.token, 'a later holder writes', 10_000);
      run.resume(victim);
      checks.paused.push(await run.released(victim, held.token, 10_000));
    }
  };
}

/** CLIENT KILL TYPE pubsub again and again for `ms`. */
function pubsub(ms: number): Step {
  return async (run, _spec, checks) => {
    const until = run.now() + ms;
    while (run.now() < until) {
      await run.sleep(150 + Math.random() * 250);
      run.fault('CLIENT KILL TYPE pubsub');
      checks.pubsubKilled += Number(await run.admin.client('KILL', 'TYPE', 'PUBSUB'));
    }
  };
}

/** Redis restarted while held: down past the lease, then back at once. */
function restart(times: number): Step {
  return async (run, _spec, checks) => {
    for (let i = 0; i < times; i++) {
      checks.restarted.push((await run.restartWhileHeld(Math.round(1.5 * leaseMs))).lost);
      await run.sleep(100);
      checks.restarted.push((await run.restartWhileHeld(0)).lost);
    }
  };
}

async function runSteps(spec: FamilySpec, name: string, steps: readonly Step[], limitMs: number): Promise<{ result: Result; checks: Checks }> {
  const checks: Checks = { paused: [], restarted: [], recoveries: [], pubsubKilled: 0 };
  const result = await scenario({ workers: 4, ...spec.options, name, kind: spec.kind, leaseMs, limitMs }, async (run) => {
    await run.sleep(300);
    for (const step of steps) {
      await step(run, spec, checks);
      await run.sleep(100);
    }
    if (checks.recoveries.length > 0) run.notes.push(`went on after a kill within ${Math.round(Math.max(...checks.recoveries))} ms`);
    if (checks.pubsubKilled > 0) run.notes.push(`subscriber connections killed ${checks.pubsubKilled}`);
    // That sections really ran side by side where the primitive allows it.
    const entries = run.entries();
    if (spec.kind === 'semaphore') run.notes.push(`most permits held at once ${peak(entries, (e) => e.permits ?? 1)} of ${spec.options.permits ?? 2}`);
    if (spec.kind === 'rw-lock') run.notes.push(`most readers at once ${peak(entries.filter((e) => e.mode === 'read'))}`);
    if (spec.kind === 'multi-lock') run.notes.push(`most sections at once ${peak(entries)}`);
  });
  return { result, checks };
}

function assertRun(spec: FamilySpec, { result, checks }: { result: Result; checks: Checks }): void {
  const { report } = result;
  assert.equal(report.problems, []);
  assert.is(report.overlaps.length, 0);
  assert.ok(report.acquisitions > 0, 'some sections ran');
  const recoverWithinMs = spec.recoverWithinMs ?? 2 * leaseMs + 500;
  for (const ms of checks.recoveries) assert.ok(ms <= recoverWithinMs, `went on ${Math.round(ms)} ms after the kill (bound ${recoverWithinMs} ms)`);
  for (const section of checks.paused) {
    assert.is(section.lostCode, 'ERR_LOCK_LOST', 'the paused holder finds lease.signal aborted with LockLostError');
    assert.is(section.release, spec.releaseAfterLoss ?? 'ERR_LOCK_NOT_HELD', 'its late release finds the hold gone');
    if (spec.staleLateWrite) assert.is(section.late?.write, 'stale', 'its late write carries a stale token');
  }
  for (const section of checks.restarted) {
    assert.is(section.lostCode, 'ERR_LOCK_LOST', `the holder learns its lease is lost (${JSON.stringify(section)})`);
    assert.is(section.write, 'none', 'the holder stops writing once its signal aborted');
  }
}

/**
 * The negative control of a primitive (full mode): workers that ignore lease.signal on a 5 ms fixed
 * lease, with sections longer than that. Real processes then hold beyond what the primitive allows,
 * and its checker must say so.
 */
function negativeControl(it: It, spec: FamilySpec): void {
  const { fixedLeaseMs, maxAwaitMs } = spec.negative!;
  it(
    `${spec.label}: the negative control (signal ignored, ${fixedLeaseMs} ms lease) is caught by its checker`,
    async () => {
      console.log(`  expected: these ${spec.label} workers ignore lease.signal on purpose; the checker must catch what is printed below as "caught (negative control)"`);
      const { report } = await scenario(
        { workers: 3, ...spec.options, name: `${spec.label} negative control (signal ignored, ${fixedLeaseMs} ms lease)`, kind: spec.kind, leaseMs, fixedLeaseMs, maxAwaitMs, blind: true, limitMs: 45_000 },
        (run) => run.sleep(1_500),
      );
      assert.ok(report.overlaps.length > 0, `the checker reports sections beyond what a ${spec.label} allows`);
    },
    60_000,
  );
}

/** The scenarios of one primitive, as tests of `it`. */
export function familyScenarios(it: It, spec: FamilySpec): void {
  if (MODE === 'short') {
    it(
      `${spec.label}: SIGKILL and SIGSTOP of a holder, subscribers killed, Redis restarted: zero violations`,
      async () => {
        const run = await runSteps(spec, `${spec.label}: kill, pause, pub/sub kill, restart`, [kill(1), pause(1), pubsub(1_200), restart(1)], 90_000);
        assertRun(spec, run);
      },
      120_000,
    );
    return;
  }
  const scenarios: [string, Step][] = [
    ['SIGKILL holder', kill(sized(1, 6))],
    ['SIGSTOP holder past its lease', pause(sized(1, 4))],
    ['CLIENT KILL TYPE pubsub', pubsub(sized(1_500, 20_000))],
    ['Redis restart (SHUTDOWN NOSAVE)', restart(sized(1, 3))],
  ];
  if (spec.negative) negativeControl(it, spec);
  for (const [fault, step] of scenarios) {
    it(
      `${spec.label}: ${fault}: zero violations`,
      async () => assertRun(spec, await runSteps(spec, `${spec.label} ${fault}`, [step], 180_000)),
      240_000,
    );
  }
}
