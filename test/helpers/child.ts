// A script run in a child process (TypeScript through tsx), for what only a process can show: that
// it exits on its own (no timer, socket or connection left open).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { within } from './describe.ts';

/** The repository's root. */
export const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** How `source` imports relock's source: `import { LockClient } from ${RELOCK};`. */
export const RELOCK = JSON.stringify(pathToFileURL(join(root, 'src', 'index.ts')).href);
/** How `source` requires a package of the repository's: `createRequire(${PACKAGE})('redis')`. */
export const PACKAGE = JSON.stringify(join(root, 'package.json'));

/**
 * Runs `source` (an ES module) with `args` and resolves with its exit code and output once it exits.
 * The process is given 60 s to start and load its imports (compiling relock's source takes seconds
 * on a busy machine, and is not what is measured); from the moment its imports are loaded (the line
 * "ready" the script is prefixed with) it must exit within `exitMs`.
 */
export async function exitsOnItsOwn(source: string, args: readonly string[], exitMs: number, what: string): Promise<{ code: number | null; output: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'relock-child-'));
  const script = join(dir, 'script.mts');
  // Static imports are hoisted: this first line runs once every import is loaded.
  writeFileSync(script, `console.log('ready');\n${source}`);
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (onReady = resolve));
  child.stdout.on('data', (data: Buffer) => {
    output += data;
    if (/^ready$/m.test(output)) onReady();
  });
  child.stderr.on('data', (data: Buffer) => (output += data));
  const exited = once(child, 'exit') as Promise<[number | null]>;
  try {
    await within(Promise.race([ready, exited]), 60_000, `${what}: the process started`);
    const [code] = await within(exited, exitMs, `${what}: exiting on its own within ${exitMs} ms of its start`);
    return { code, output };
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
}
