// Runs the built `relock` command (dist/cli.mjs, what package.json "bin" points at) as a child process.
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { within } from '../../helpers/describe.ts';

export const CLI = join(import.meta.dirname, '..', '..', '..', 'dist', 'cli.mjs');

export interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface Running {
  readonly child: ChildProcess;
  readonly output: { stdout: string; stderr: string };
  /** Resolves when stdout has shown `text`. */
  printed(text: string, ms?: number): Promise<void>;
  readonly ended: Promise<Ended>;
}

/** Starts `relock <args>` with a clean environment: no REDIS_URL unless `env` gives one. */
export function start(args: readonly string[], env: Record<string, string> = {}): Running {
  assert.ok(existsSync(CLI), `${CLI} is missing: npm test builds it first (npm run build)`);
  const { REDIS_URL: _, ...base } = process.env;
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const output = { stdout: '', stderr: '' };
  const waiters = new Set<() => void>();
  child.stdout!.on('data', (chunk: Buffer) => {
    output.stdout += chunk.toString();
    for (const check of waiters) check();
  });
  child.stderr!.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  const ended = new Promise<Ended>((resolve) => child.once('close', (code, signal) => resolve({ code, signal, ...output })));
  return {
    child,
    output,
    ended,
    printed: (text, ms = 10_000) =>
      within(
        new Promise<void>((resolve, reject) => {
          const check = () => {
            if (output.stdout.includes(text)) {
              waiters.delete(check);
              resolve();
            }
          };
          waiters.add(check);
          ended.then(() => reject(new Error(`relock exited before printing "${text}": ${JSON.stringify(output)}`)));
          check();
        }),
        ms,
        `relock ${args.join(' ')} printing "${text}" (printed ${JSON.stringify(output)})`,
      ),
  };
}

/** Runs `relock <args>` to its end. */
export function relock(args: readonly string[], env: Record<string, string> = {}, ms = 15_000): Promise<Ended> {
  return within(start(args, env).ended, ms, `relock ${args.join(' ')}`);
}

/** A command for `relock run ... --`: this Node running `source`. */
export function node(source: string): string[] {
  return [process.execPath, '-e', source];
}

/** Runs `relock` once per argument list, a few at a time (each is a Node process). */
export async function relockEach(cases: readonly (readonly string[])[], env: Record<string, string> = {}, parallel = 4): Promise<Ended[]> {
  const results: Ended[] = [];
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const i = next++;
      results[i] = await relock(cases[i]!, env);
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return results;
}
