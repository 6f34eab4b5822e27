// The test matrices' tables (the servers, the client families and their suite groups) and one cell of a
// matrix (test/servers.ts, test/clients.ts, test/pairs.ts): suite groups in one run of test/run.ts
// with the cell's environment, its output passed through; its closing line gives the counts.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));

/** The servers of the server matrix (scripts/servers.sh brings them into .servers/). */
export const SERVERS = ['valkey-8.0', 'redis-6.0', 'redis-8.0', 'valkey-8.1', 'valkey-9.1'];
/** Suite groups by the name the matrix prints: a folder or files under test/, as test/run.ts takes them. */
export const GROUPS: Record<string, readonly string[]> = {
  contract: ['contract'],
  'integration/redlock': ['integration/redlock'],
  'integration/cluster': ['integration/cluster'],
  // The ACL user and the managed-service profile: Valkey and Redis 6.0 differ in what a user may run.
  'acl+managed': ['integration/server/security.test.ts', 'integration/server/managed.test.ts'],
  'faults-short': ['faults-short'],
  // relock's Redisson layout against the Redisson stand-in (docs/redisson.md): plain pub/sub on Redis 6.0's Cluster.
  'integration/redisson': ['integration/redisson', 'layouts'],
  // A server without Lua (scripting renamed away; on Valkey 9, its lua module unloaded) refused at first use.
  'no-lua': ['integration/server/no-scripting.test.ts'],
};

/** A client family's groups: the contract suites, Redlock, Cluster (and a failover on it) and the short fault run. */
export const FULL = ['contract', 'integration/job', 'integration/leader', 'integration/redlock', 'integration/cluster', 'integration/multi-lock/cluster.test.ts', 'integration/failover/cluster.test.ts', 'faults-short'];
/** The client families of the client matrix and the groups each runs (RELOCK_TEST_CLIENT names the family). */
export const FAMILIES: Record<string, readonly string[]> = {
  iovalkey: FULL,
  'node-redis': FULL,
  'node-redis-resp3': ['contract', 'integration/cluster'],
  'node-redis-6': ['contract', 'integration/cluster'],
  glide: FULL,
  // Not a client: the interop suites (with their Cluster halves), the contract suites and the short
  // fault run in the Redisson layout (docs/redisson.md).
  'layout-redisson': ['integration/redisson', 'layouts', 'faults-short'],
};
/** What a cell sets besides RELOCK_TEST_CLIENT (ioredis for the layout cell). */
export const ENV: Record<string, Record<string, string>> = { 'layout-redisson': { RELOCK_TEST_CLIENT: 'ioredis', RELOCK_TEST_LAYOUT: 'redisson' } };

export interface Counts {
  passed: number;
  failed: number;
  /** The FAIL lines the cell printed (its suite and test), repeated in the summary: a CI log keeps its end. */
  failures?: readonly string[];
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
  let output = '';
  child.stdout.on('data', (data: Buffer) => {
    if (buffered) chunks.push(data.toString());
    else process.stdout.write(data);
    last = (last + data.toString()).slice(-400);
    output += data.toString();
  });
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      if (buffered) process.stdout.write(chunks.join(''));
      const match = /tests: (\d+) passed, (\d+) failed/.exec(last);
      // uvu prints each failure as "FAIL  <suite>  "<test>"" (colours stripped).
      const failures = [...new Set(output.replace(/\x1b\[[0-9;]*m/g, '').match(/FAIL {2}.*$/gm) ?? [])];
      const counts = match ? { passed: Number(match[1]), failed: Number(match[2]), failures } : { passed: 0, failed: 1, failures };
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
  for (const row of rows) {
    console.log(`  ${row.label} ${row.passed} passed, ${row.failed} failed`);
    for (const failure of row.failures ?? []) console.log(`      ${failure.trim()}`);
  }
  const passed = rows.reduce((sum, row) => sum + row.passed, 0);
  const failed = rows.reduce((sum, row) => sum + row.failed, 0);
  console.log(`${name}s: ${passed} passed, ${failed} failed`);
  if (failed > 0 || passed === 0) process.exitCode = 1;
}
