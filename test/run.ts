// Runs the uvu suites of the named groups (default: unit, contract, integration, faults-short) and
// closes with "N passed, N failed". An unhandled rejection fails the run.
//
// The suites wait on Redis, child processes and timers far more than they compute, so the files are
// shared among RELOCK_TEST_JOBS worker processes (default 4: on 2 cores they keep ~1.3 busy) that each take the next file when done
// with one; a worker's output is printed whole per file, never interleaved. At most
// RELOCK_FAULT_JOBS (default 2) fault scenario files run at once, so that their timing bounds hold on
// 2 cores; they append their results to one file, and the closing total (faults/zz-total.test.ts)
// runs last, alone, over all of them. c8 follows the workers (NODE_V8_COVERAGE is inherited).
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));
const END = '\u0000relock:unit-end\n';

/** The files of one unit run in one worker, in order. */
type Unit = readonly string[];
const isFault = (unit: Unit) => unit.some((file) => file.includes(`${join('test', 'faults')}/`) || file.startsWith(join(root, 'faults')));
const isTotal = (unit: Unit) => unit.some((file) => file.endsWith('zz-total.test.ts'));
type FromWorker = { passed: number; failed: number };

function files(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .flatMap((entry) => {
      const path = join(dir, entry);
      if (statSync(path).isDirectory()) return entry === 'helpers' ? [] : files(path);
      return entry.endsWith('.test.ts') ? [path] : [];
    });
}

function units(groups: readonly string[]): Unit[] {
  return groups.flatMap((group): Unit[] => {
    if (group === 'faults-short' || group === 'faults') {
      process.env.RELOCK_FAULTS = group === 'faults' ? 'full' : (process.env.RELOCK_FAULTS ?? 'short');
      return files(join(root, 'faults')).map((file) => [file]);
    }
    // A single file runs too: node --import tsx test/run.ts integration/lock/lock.test.ts
    if (group.endsWith('.test.ts')) return [[join(root, group)]];
    return files(join(root, group)).map((file) => [file]);
  });
}

if (process.env.RELOCK_TEST_WORKER === '1') await worker();
else await main();

async function main(): Promise<void> {
  const groups = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['unit', 'contract', 'integration'];
  const all = units(groups);
  // The fault scenarios first (the longest), so the other files fill the workers around them.
  const queue = [...all.filter((u) => isFault(u) && !isTotal(u)), ...all.filter((u) => !isFault(u))];
  const last = all.filter(isTotal);
  const jobs = Math.max(1, Math.min(Number(process.env.RELOCK_TEST_JOBS ?? 4) || 1, queue.length));
  const scheduler: Scheduler = { queue, faultsRunning: 0, faultJobs: Math.max(1, Number(process.env.RELOCK_FAULT_JOBS ?? 2) || 1) };
  const dir = mkdtempSync(join(tmpdir(), 'relock-test-'));
  const env = { ...process.env, RELOCK_TEST_WORKER: '1', RELOCK_FAULTS_RESULTS: join(dir, 'faults.jsonl') };
  let passed = 0;
  let failed = 0;
  const run = (lanes: number, from: Scheduler) =>
    Promise.all(
      Array.from({ length: lanes }, () =>
        drive(fork(fileURLToPath(import.meta.url), [], { env, stdio: ['inherit', 'pipe', 'pipe', 'ipc'] }), from).then((result) => {
          passed += result.passed;
          failed += result.failed;
        }),
      ),
    );
  try {
    await run(jobs, scheduler);
    if (last.length > 0) await run(1, { queue: last, faultsRunning: 0, faultJobs: 1 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`tests: ${passed} passed, ${failed} failed`);
  if (failed > 0 || passed === 0) process.exitCode = 1;
}

interface Scheduler {
  readonly queue: Unit[];
  faultsRunning: number;
  readonly faultJobs: number;
}

/** The next unit a free worker may take: a fault file only while fewer than faultJobs run. */
function take(s: Scheduler): Unit | undefined {
  const index = s.queue.findIndex((unit) => !isFault(unit) || s.faultsRunning < s.faultJobs);
  if (index < 0) return undefined;
  const [unit] = s.queue.splice(index, 1);
  if (isFault(unit!)) s.faultsRunning++;
  return unit;
}

/** Feeds `child` units from the scheduler until none is left for it; prints its output a unit at a time. */
function drive(child: ChildProcess, scheduler: Scheduler): Promise<FromWorker> {
  let out = '';
  let current: Unit | undefined;
  const flush = (text: string) => text && process.stdout.write(text);
  child.stdout!.on('data', (data: Buffer) => {
    out += data.toString();
    for (let end = out.indexOf(END); end >= 0; end = out.indexOf(END)) {
      flush(out.slice(0, end));
      out = out.slice(end + END.length);
    }
  });
  child.stderr!.on('data', (data: Buffer) => (out += data.toString()));
  const next = () => {
    if (current && isFault(current)) scheduler.faultsRunning--;
    current = take(scheduler);
    if (current) child.send(current);
    else child.send('exit');
  };
  return new Promise((resolve) => {
    let result: FromWorker = { passed: 0, failed: 0 };
    child.on('message', (message: FromWorker) => {
      result = message;
      next();
    });
    child.on('exit', (code, signal) => {
      flush(out);
      // A worker that died mid-file (or failed outside any test) fails the run.
      if (current || code !== 0) {
        console.error(`test worker exited (${signal ?? code}) ${current ? `while running ${current.map((f) => f.slice(root.length + 1)).join(', ')}` : ''}`);
        result = { ...result, failed: result.failed + 1 };
      }
      resolve(result);
    });
    next();
  });
}

async function worker(): Promise<void> {
  let unhandled = 0;
  process.on('unhandledRejection', (error) => {
    unhandled++;
    console.error('Unhandled rejection:', error);
  });
  // uvu must see UVU_DEFER before its first import, or every suite also runs on its own timer.
  const g = globalThis as { UVU_DEFER?: number; UVU_INDEX?: number; UVU_QUEUE?: unknown[][] };
  g.UVU_DEFER = 1;
  const uvu = await import('uvu');
  const { counts } = await import('./helpers/describe.ts');
  process.on('message', async (unit: Unit | 'exit') => {
    if (unit === 'exit') {
      // Sockets and servers of a failed test must not keep the worker alive ('exit' hooks stop the
      // redis-servers the tests started).
      process.stdout.write('', () => process.exit(0));
      return;
    }
    g.UVU_QUEUE = [];
    let index = 0;
    // A file that cannot be loaded (a missing src/generated/, a syntax error) fails the run; it
    // must not leave the worker silent and the run waiting for it forever.
    let unloaded = 0;
    for (const file of unit) {
      g.UVU_INDEX = index++;
      g.UVU_QUEUE.push([file.slice(root.length + 1)]);
      try {
        await import(pathToFileURL(file).href);
      } catch (error) {
        unloaded++;
        console.error(`could not load ${file.slice(root.length + 1)}:`, error);
      }
    }
    await uvu.exec(false);
    process.exitCode = 0;
    process.stdout.write(END, () => process.send!({ passed: counts.passed, failed: counts.failed + unhandled + unloaded } satisfies FromWorker));
  });
}
