// The runtime matrix (npm run test:runtimes): on Node 20 (the machine's), 22, 24 and 26, Bun and Deno,
// each installed by scripts/runtimes.sh from the npm registry into .runtimes/<name>/:
// - contract: the contract suites of every kind through test/run.ts, its workers forked on that same
//   runtime (Node through tsx; Bun and Deno run the TypeScript themselves);
// - smoke: test/runtimes/smoke.mjs over the built package (dist/: npm run build first), plain
//   node:assert: every kind across two clients, a wake-up across processes, re-entry per async
//   context, a lost lease, `await using`, the tracing channels, Bun.RedisClient refused on Bun, and
//   the process ending by itself after close().
// Node 20 runs the smoke only unless its contract cell is named (npm test runs the contract suites on it).
// RELOCK_RUNTIME_JOBS (default 1) runtimes run side by side (CI: 2), each cell's output printed whole.
// Prints a line per runtime and cell, then "N passed, N failed" over all of them.
// Usage: node --import tsx test/runtimes.ts [runtime ...] [-- cell ...]
import { execFileSync, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inPool, report, type Counts } from './matrix.ts';

const root = dirname(fileURLToPath(import.meta.url));
const RUNTIMES = ['node-20', 'node-22', 'node-24', 'node-26', 'bun', 'deno'];
/** The arguments that run a file on a runtime (Deno: `run -A`; Node: through tsx for TypeScript). */
const launch = (runtime: string, file: string): string[] =>
  runtime === 'deno' ? ['run', '-A', file] : runtime.startsWith('node') && file.endsWith('.ts') ? ['--import', 'tsx', file] : [file];
const CELLS: Record<string, (runtime: string) => string[]> = {
  contract: (runtime) => [...launch(runtime, join(root, 'run.ts')), 'contract'],
  smoke: (runtime) => launch(runtime, join(root, 'runtimes', 'smoke.mjs')),
};
/** A smoke that has not ended 60 s after it began did not end by itself: something was left running. */
const SMOKE_LIMIT_MS = 60_000;

const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
const chosen = (dash < 0 ? argv : argv.slice(0, dash)).filter(Boolean);
const named = dash < 0 ? undefined : argv.slice(dash + 1);
const cellsOf = (runtime: string) => named ?? (runtime === 'node-20' ? ['smoke'] : Object.keys(CELLS));
const runtimes = chosen.length > 0 ? chosen : RUNTIMES;

const binaries = new Map(
  execFileSync('bash', [join(root, '..', 'scripts', 'runtimes.sh'), ...runtimes], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
    .trim()
    .split('\n')
    .map((line) => line.split(' ') as [string, string]),
);

/** Runs one cell; its closing "N passed, N failed" line gives the counts (none, or a non-zero exit: a failure). */
function runCell(title: string, binary: string, args: string[], buffered: boolean, limitMs?: number): Promise<Counts> {
  const chunks: string[] = [`\n=== ${title}\n`];
  const out = (text: string) => (buffered ? chunks.push(text) : process.stdout.write(text));
  if (!buffered) process.stdout.write(chunks.shift()!);
  const started = performance.now();
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let last = '';
  child.stdout.on('data', (data: Buffer) => {
    out(data.toString());
    last = (last + data.toString()).slice(-400);
  });
  const timer = limitMs === undefined ? undefined : setTimeout(() => {
    out(`  FAIL ${title}: still running ${limitMs / 1000} s after it began (something kept the process alive): killed\n`);
    child.kill('SIGKILL');
  }, limitMs);
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      clearTimeout(timer);
      out(`  (${title}: ${((performance.now() - started) / 1000).toFixed(1)} s)\n`);
      if (buffered) process.stdout.write(chunks.join(''));
      const match = /(\d+) passed, (\d+) failed\s*$/.exec(last);
      const counts = match ? { passed: Number(match[1]), failed: Number(match[2]) } : { passed: 0, failed: 1 };
      resolve(code !== 0 && counts.failed === 0 ? { ...counts, failed: 1 } : counts);
    });
  });
}

const jobs = Math.max(1, Number(process.env.RELOCK_RUNTIME_JOBS ?? 1) || 1);
const perRuntime = await inPool(runtimes, jobs, async (runtime) => {
  const rows: (Counts & { label: string })[] = [];
  const binary = binaries.get(runtime)!;
  for (const cell of cellsOf(runtime)) {
    const args = CELLS[cell]?.(runtime);
    if (!args) throw new Error(`unknown cell ${cell} (expected one of ${Object.keys(CELLS).join(', ')})`);
    const counts = await runCell(`${runtime}: ${cell}`, binary, args, jobs > 1, cell === 'smoke' ? SMOKE_LIMIT_MS : undefined);
    rows.push({ label: `${runtime.padEnd(8)} ${cell.padEnd(9)}`, ...counts });
  }
  return rows;
});
report('runtime', perRuntime.flat());
