// One cell of a test matrix (test/servers.ts, test/clients.ts): suite groups in one run of
// test/run.ts with the cell's environment, its output passed through; its closing line gives the counts.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));

export interface Counts {
  passed: number;
  failed: number;
}

/**
 * Runs test/run.ts over `groups` with `env` added; a run that exited non-zero without counting a failure
 * failed outside any test. `buffered`: its output is printed whole when it ends (cells running side by side).
 */
export function runCell(title: string, groups: readonly string[], env: Record<string, string>, buffered = false): Promise<Counts> {
  const chunks: string[] = [`\n=== ${title}\n`];
  if (!buffered) process.stdout.write(chunks.shift()!);
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'run.ts'), ...groups], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let last = '';
  child.stdout.on('data', (data: Buffer) => {
    if (buffered) chunks.push(data.toString());
    else process.stdout.write(data);
    last = (last + data.toString()).slice(-400);
  });
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      if (buffered) process.stdout.write(chunks.join(''));
      const match = /tests: (\d+) passed, (\d+) failed/.exec(last);
      const counts = match ? { passed: Number(match[1]), failed: Number(match[2]) } : { passed: 0, failed: 1 };
      resolve(code !== 0 && counts.failed === 0 ? { ...counts, failed: 1 } : counts);
    });
  });
}

/** Runs `task` over `items`, at most `jobs` at once; the results in the order of `items`. */
export async function inPool<T, R>(items: readonly T[], jobs: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await task(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(jobs, items.length)) }, lane));
  return results;
}

/** Prints the matrix's table and total, and fails the process when anything failed or nothing ran. */
export function report(name: string, rows: readonly (Counts & { readonly label: string })[]): void {
  console.log(`\n${name} matrix:`);
  for (const row of rows) console.log(`  ${row.label} ${row.passed} passed, ${row.failed} failed`);
  const passed = rows.reduce((sum, row) => sum + row.passed, 0);
  const failed = rows.reduce((sum, row) => sum + row.failed, 0);
  console.log(`${name}s: ${passed} passed, ${failed} failed`);
  if (failed > 0 || passed === 0) process.exitCode = 1;
}
