// relock as it was before a change, built on the fly from git, so that one run of the bench shows
// before and after side by side (the adapter `relock-0.1.0`). The source of one commit is extracted
// into bench/results/baseline-src/, built there with the root's node_modules (its scripts and its
// rollup config of that commit), and its ESM bundle copied to bench/results/baseline/index.mjs,
// where it resolves its dependencies up the tree as relock's own copy does. Built once per commit.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { copyBuild } from './bundle.ts';

/** The code before the runtime restructuring and the uncontended fast path (issue 8). */
const DEFAULT_BASELINE = 'a8e97c5';

/** The commit built as relock-0.1.0: RELOCK_BASELINE_COMMIT to measure another change, else DEFAULT_BASELINE. */
export const BASELINE_COMMIT = process.env.RELOCK_BASELINE_COMMIT || DEFAULT_BASELINE;

/** What the baseline is, for the report. */
export const BASELINE_WHAT = BASELINE_COMMIT === DEFAULT_BASELINE ? 'before the runtime restructuring and the uncontended fast path' : 'set by RELOCK_BASELINE_COMMIT';

/** What the archive holds: enough to generate the Lua module and bundle. */
const PATHS = ['src', 'lua', 'scripts', 'package.json', 'rollup.config.mjs', 'tsconfig.json'];

export type Baseline = { ok: true; bundle: string; commit: string; built: boolean } | { ok: false; reason: string };

/**
 * The baseline's bundle (a file: URL), building it first unless bench/results/baseline/ already holds
 * one from the same commit; `{ ok: false }` with the reason when git, the commit or the build fails.
 */
export function baselineBundle(root: string, results: string, commit = BASELINE_COMMIT): Baseline {
  let sha: string;
  try {
    sha = execFileSync('git', ['-C', root, 'rev-parse', '--verify', '--quiet', `${commit}^{commit}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return { ok: false, reason: `git or commit ${commit} is not available in ${root}` };
  }
  const out = join(results, 'baseline');
  const bundle = join(out, 'index.mjs');
  const stamp = join(out, 'commit');
  if (existsSync(bundle) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === sha) return { ok: true, bundle: pathToFileURL(bundle).href, commit: sha, built: false };

  const src = join(results, 'baseline-src');
  try {
    rmSync(src, { recursive: true, force: true });
    mkdirSync(src, { recursive: true });
    const archive = execFileSync('git', ['-C', root, 'archive', '--format=tar', sha, ...PATHS], { maxBuffer: 256 * 2 ** 20, stdio: ['ignore', 'pipe', 'pipe'] });
    execFileSync('tar', ['-x', '-C', src], { input: archive, stdio: ['pipe', 'ignore', 'pipe'] });
    symlinkSync(join(root, 'node_modules'), join(src, 'node_modules'), 'dir');
    const run = (args: string[]) => execFileSync(process.execPath, args, { cwd: src, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, NO_COLOR: '1' } });
    run(['scripts/gen-lua.mjs']);
    // `npx rollup -c` without npx: the root's own rollup, as its build script runs it.
    run([join(src, 'node_modules', 'rollup', 'dist', 'bin', 'rollup'), '-c']);
    copyBuild(join(src, 'dist'), out);
    writeFileSync(stamp, `${sha}\n`);
  } catch (error) {
    const detail = error instanceof Error ? ((error as { stderr?: Buffer }).stderr?.toString().trim().split('\n').slice(-3).join(' ') || error.message) : String(error);
    return { ok: false, reason: `building ${commit} failed: ${detail}` };
  }
  return { ok: true, bundle: pathToFileURL(bundle).href, commit: sha, built: true };
}
