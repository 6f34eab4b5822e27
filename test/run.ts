// Runs the uvu suites of the named groups (default: unit, contract, integration, faults-short) and
// closes with "N passed, N failed". An unhandled rejection fails the run.
//
// The suites wait on Redis, child processes and timers far more than they compute, so the files are
// shared among RELOCK_TEST_JOBS worker processes (default 3) that each take the next file when done
// with one; a worker's output is printed whole per file, never interleaved. The fault scenarios run
// in one worker, one after another, as they would alone: their closing total reads every scenario's
// result from the process they ran in. c8 follows the workers (NODE_V8_COVERAGE is inherited).
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));
const END = '\u0000relock:unit-end\n';

/** The files of one unit run in one worker, in order. */
type Unit = readonly string[];
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
      const all = files(join(root, 'faults'));
      return all.length > 0 ? [all] : [];
    }
    // A single file runs too: node --import tsx test/run.ts integration/lock.test.ts
    if (group.endsWith('.test.ts')) return [[join(root, group)]];
    return files(join(root, group)).map((file) => [file]);
  });
}

if (process.env.RELOCK_TEST_WORKER === '1') await worker();
else await main();

async function main(): Promise<void> {
  const groups = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['unit', 'contract', 'integration', 'faults-short'];
  // The longest first (the fault scenarios), so the others fill the remaining workers around it.
  const queue = units(groups).sort((a, b) => b.length - a.length);
  const jobs = Math.max(1, Math.min(Number(process.env.RELOCK_TEST_JOBS ?? 3) || 1, queue.length));
  let passed = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: jobs }, () => {
      const child = fork(fileURLToPath(import.meta.url), [], { env: { ...process.env, RELOCK_TEST_WORKER: '1' }, stdio: ['inherit', 'pipe', 'pipe', 'ipc'] });
      return drive(child, queue).then((result) => {
        passed += result.passed;
        failed += result.failed;
      });
    }),
  );
  console.log(`tests: ${passed} passed, ${failed} failed`);
  if (failed > 0 || passed === 0) process.exitCode = 1;
}

/** Feeds `child` units from `queue` until it is empty; prints its output a unit at a time. */
function drive(child: ChildProcess, queue: Unit[]): Promise<FromWorker> {
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
    current = queue.shift();
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
      // Sockets and servers of a failed test must not keep the worker alive.
      setTimeout(() => process.exit(0), 200).unref();
      return process.disconnect();
    }
    g.UVU_QUEUE = [];
    let index = 0;
    for (const file of unit) {
      g.UVU_INDEX = index++;
      g.UVU_QUEUE.push([file.slice(root.length + 1)]);
      await import(pathToFileURL(file).href);
    }
    await uvu.exec(false);
    process.exitCode = 0;
    process.stdout.write(END, () => process.send!({ passed: counts.passed, failed: counts.failed + unhandled } satisfies FromWorker));
  });
}
