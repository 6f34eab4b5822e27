// relock/node-cron across processes: three processes schedule one node-cron task every second
// (`distributed: true`, `runCoordinator: runCoordinator(client)`), and each fire must run once across
// them; one process is SIGKILLed half-way, and every later fire still runs once. The checker
// (checker.ts, jobViolations) counts fires run other than once. The negative control lets every
// process run (node-cron's coordinator saying yes to all): the checker must count fires run thrice.
import * as assert from 'uvu/assert';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, uniqueName } from '../helpers/describe.ts';
import { startRedis, type RedisServer } from '../helpers/redis.ts';
import { jobViolations, type JobFire } from './checker.ts';
import { sized } from './harness.ts';

const CHILD = fileURLToPath(new URL('./node-cron-child.ts', import.meta.url));
const TICKS = sized(10, 30);

/** Three processes fire the task for `ticks` seconds (one killed after `killAfter` of them); every fire of the full seconds between. */
async function schedule(server: RedisServer, ticks: number, bare: boolean, killAfter?: number): Promise<{ fires: JobFire[]; windows: number[] }> {
  const children: ChildProcess[] = [];
  const fires: JobFire[] = [];
  try {
    await Promise.all(
      [0, 1, 2].map((index) => {
        const child = fork(CHILD, [], { execArgv: ['--import', 'tsx'], env: { ...process.env, RELOCK_CRON_CHILD: JSON.stringify({ url: server.url, index, bare }) }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
        children.push(child);
        return new Promise<void>((resolve, reject) => {
          child.on('message', (message: JobFire | { ready: true }) => ('ready' in message ? resolve() : fires.push(message)));
          child.once('exit', (code, signal) => reject(new Error(`cron process ${index} exited (${code ?? signal}) before it was ready`)));
        });
      }),
    );
    const name = uniqueName('cron');
    for (const child of children) child.send({ name });
    // The fires judged: from the second full second after every process scheduled, for `ticks` seconds.
    const first = Math.ceil(Date.now() / 1000) + 1;
    const windows = Array.from({ length: ticks }, (_, i) => first + i);
    if (killAfter !== undefined) setTimeout(() => children[0]!.kill('SIGKILL'), (first + killAfter) * 1000 + 500 - Date.now());
    await new Promise((resolve) => setTimeout(resolve, (first + ticks) * 1000 + 1_000 - Date.now()));
    return { fires: fires.filter((fire) => windows.includes(fire.window)), windows };
  } finally {
    for (const child of children) child.kill('SIGKILL');
  }
}

describe('faults: node-cron every second in three processes, over relock/node-cron', (it) => {
  let server: RedisServer;
  it.before(async () => {
    server = await startRedis({ private: true });
  });
  it.after(() => server.stop());

  it(`runs each of ${TICKS} fires once across them, also after one process is killed`, async () => {
    const { fires, windows } = await schedule(server, TICKS, false, Math.floor(TICKS / 2));
    const skipped = fires.filter((fire) => !fire.ran);
    process.stdout.write(`   node-cron: ${windows.length} fires, ${fires.length - skipped.length} runs, ${skipped.length} skips (${[...new Set(skipped.map((f) => f.reason))].join(', ')})\n`);
    assert.equal(skipped.filter((fire) => fire.reason !== 'not-elected'), [], 'every skip is "not elected"');
    assert.equal(jobViolations(fires, windows), { missed: [], twice: [] });
  }, 60_000 + TICKS * 1_000);

  it('negative control: with a coordinator that lets every process run, the checker counts fires run more than once', async () => {
    const { fires, windows } = await schedule(server, 2, true);
    assert.ok(jobViolations(fires, windows).twice.length > 0, 'the checker saw no fire run twice');
  }, 60_000);
});
