// Runs the uvu suites of the named groups (default: unit, integration, faults-short) in one process
// and closes with "N passed, N failed". An unhandled rejection fails the run.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));
const groups = process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['unit', 'contract', 'integration', 'faults-short'];

let unhandled = 0;
process.on('unhandledRejection', (error) => {
  unhandled++;
  console.error('Unhandled rejection:', error);
});

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

const selected = groups.flatMap((group) => {
  if (group === 'faults-short') {
    process.env.RELOCK_FAULTS = process.env.RELOCK_FAULTS ?? 'short';
    return files(join(root, 'faults'));
  }
  if (group === 'faults') process.env.RELOCK_FAULTS = 'full';
  return files(join(root, group));
});

// uvu must see UVU_DEFER before its first import, or every suite also runs on its own timer.
const g = globalThis as { UVU_DEFER?: number; UVU_INDEX?: number; UVU_QUEUE?: unknown[][] };
g.UVU_DEFER = 1;
const uvu = await import('uvu');
const { counts } = await import('./helpers/describe.ts');
let index = 0;
for (const file of selected) {
  g.UVU_INDEX = index++;
  g.UVU_QUEUE!.push([file.slice(root.length + 1)]);
  await import(pathToFileURL(file).href);
}
await uvu.exec(false);

// uvu reports a failing before/after hook only through the exit code.
const hookFailures = process.exitCode && counts.failed === 0 ? 1 : 0;
const failed = counts.failed + unhandled + hookFailures;
console.log(`tests: ${counts.passed} passed, ${failed} failed`);
if (failed > 0 || counts.passed === 0) process.exitCode = 1;
// Sockets and servers of a failed test must not keep the run alive.
setTimeout(() => process.exit(), 200).unref();
