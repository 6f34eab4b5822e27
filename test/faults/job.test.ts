// Jobs once per window across processes: three processes fire one job (client.job) at every window
// of one schedule, their clocks and timers 0, 400 and 800 ms apart, the job ending in 10 ms; atLeastMs
// (2 s) is longer than the skew and shorter than the period (3 s), with over a second to spare either
// way for timers a busy machine fires late. The checker (checker.ts, jobViolations) counts windows run
// other than once. Then the job's holder is SIGKILLed mid-run: that window ran once (its 2 s lease
// outlasts the skew), and the next ones run once again (it ends before the next window). The
// negative control fires the same schedule with atLeastMs 0: the checker must count windows run twice.
import * as assert from 'uvu/assert';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, uniqueName } from '../helpers/describe.ts';
import { startRedis, type RedisServer } from '../helpers/redis.ts';
import { jobViolations, type JobFire } from './checker.ts';
import { record, sized } from './harness.ts';

const CHILD = fileURLToPath(new URL('./job-child.ts', import.meta.url));
const PERIOD_MS = 3_000;
const OFFSETS_MS = [0, 400, 800];
const WINDOWS = sized(4, 20);

interface Schedule {
  readonly windows: number;
  readonly atLeastMs: number;
  /** SIGKILL the process that runs this window's job (a run of 60 s), 50 ms into its run. */
  readonly killInWindow?: number;
}

/** Runs the schedule in three processes; resolves with every fire once the last window has settled. */
async function fire(server: RedisServer, schedule: Schedule): Promise<{ fires: JobFire[]; killed: number | undefined }> {
  const name = uniqueName('job');
  const children: ChildProcess[] = [];
  const fires: JobFire[] = [];
  let killed: number | undefined;
  try {
    await Promise.all(
      OFFSETS_MS.map((offsetMs, index) => {
        const config = { url: server.url, name, index, offsetMs, periodMs: PERIOD_MS, windows: schedule.windows, atLeastMs: schedule.atLeastMs, atMostMs: 10_000, jobMs: 10, leaseMs: 2_000, longWindow: schedule.killInWindow };
        const child = fork(CHILD, [], { execArgv: ['--import', 'tsx'], env: { ...process.env, RELOCK_JOB_CHILD: JSON.stringify(config) }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
        children.push(child);
        return new Promise<void>((resolve, reject) => {
          child.on('message', (message: JobFire | { ready: true }) => {
            if ('ready' in message) return resolve();
            fires.push(message);
            if (message.ran && message.window === schedule.killInWindow && killed === undefined) {
              killed = index;
              setTimeout(() => child.kill('SIGKILL'), 50);
            }
          });
          child.once('exit', (code, signal) => (killed === index ? undefined : reject(new Error(`job process ${index} exited (${code ?? signal}) before it was ready`))));
        });
      }),
    );
    const firstAt = Date.now() + 500;
    for (const child of children) child.send({ firstAt });
    await new Promise((resolve) => setTimeout(resolve, firstAt - Date.now() + schedule.windows * PERIOD_MS + 1_000));
    return { fires, killed };
  } finally {
    for (const child of children) child.kill('SIGKILL');
  }
}

/** Adds a run to the closing total: runs as acquisitions, windows run twice as overlaps. */
function recordJob(fires: readonly JobFire[], violations: ReturnType<typeof jobViolations>, n: number): void {
  const report = { acquisitions: fires.filter((f) => f.ran).length, fifoJudged: 0, lostLeases: 0, longestWaitMs: 0, longestStallMs: 0, staleWrites: 0 };
  record({ kind: 'job', durationMs: n * PERIOD_MS, faults: { length: 0 }, report: { ...report, overlaps: { length: violations.twice.length }, overtaken: { length: 0 } } });
}

const windows = (n: number) => Array.from({ length: n }, (_, i) => i);
const errors = (fires: readonly JobFire[]) => fires.filter((f) => f.reason?.startsWith('error')).map((f) => `process ${f.process}, window ${f.window}: ${f.reason}`);

describe('faults: a job fired by three processes 0-800 ms apart', (it) => {
  let server: RedisServer;
  it.before(async () => {
    server = await startRedis({ private: true });
  });
  it.after(() => server.stop());

  it(`runs it exactly once in each of ${WINDOWS} windows, the job ending in 10 ms`, async () => {
    const { fires } = await fire(server, { windows: WINDOWS, atLeastMs: 2_000 });
    const violations = jobViolations(fires, windows(WINDOWS));
    const skipped = fires.filter((f) => !f.ran);
    process.stdout.write(`   job windows: ${WINDOWS} windows, ${fires.length - skipped.length} runs, ${skipped.filter((f) => f.reason === 'window').length} fires skipped as "window", ${skipped.filter((f) => f.reason === 'held').length} as "held"\n`);
    recordJob(fires, violations, WINDOWS);
    assert.equal(errors(fires), []);
    assert.equal(violations, { missed: [], twice: [] });
    assert.ok(skipped.some((f) => f.reason === 'window'), 'the late processes found the window taken');
  }, 60_000 + WINDOWS * PERIOD_MS);

  it('runs the window once when its holder is SIGKILLed mid-run, and every later window once', async () => {
    const n = sized(3, 8);
    const { fires, killed } = await fire(server, { windows: n, atLeastMs: 2_000, killInWindow: 1 });
    assert.ok(killed !== undefined, 'a holder was killed');
    const violations = jobViolations(fires, windows(n));
    recordJob(fires, violations, n);
    assert.equal(errors(fires), []);
    assert.equal(violations, { missed: [], twice: [] });
  }, 60_000 + 8 * PERIOD_MS);

  it('negative control: with atLeastMs 0 the checker counts windows run more than once', async () => {
    const n = 2;
    const { fires } = await fire(server, { windows: n, atLeastMs: 0 });
    const violations = jobViolations(fires, windows(n));
    assert.ok(violations.twice.length > 0, `the checker saw no window run twice: ${JSON.stringify(violations)}`);
  }, 60_000 + 2 * PERIOD_MS);
});
