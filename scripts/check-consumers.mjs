// relock's packed tarball in the projects users have (issue 31): consumer-checks/ holds the tools
// (its own package.json and lock file, installed here with `npm ci`) and the projects.
//  1. Jest 30: plain CommonJS tests, ts-jest to CommonJS (node10 resolution), ts-jest's ESM preset.
//  2. Bundles without node_modules: esbuild (ESM and CommonJS output) and webpack, each an app that
//     imports ioredis and passes relock a URL with the `ioredis` option; without the option the
//     esbuild bundle must fail (what the option is for).
//  3. tsc, `skipLibCheck: false`, module nodenext, node16 and bundler, over a project with only
//     node-redis, one with only GLIDE, and one with ioredis (whose options must be checked).
// Run by `npm run check:consumers` after the build (CI: .ci/run). Leaves no file behind but
// consumer-checks/node_modules/.
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

const root = fileURLToPath(new URL('..', import.meta.url));
const checks = join(root, 'consumer-checks');
const modules = join(checks, 'node_modules');
const started = performance.now();
const failures = [];

function step(title) {
  console.log(`\n== ${title} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
}

/**
 * Runs Node with `args`; passes when it exits 0 and `expect` (if given) matches its output, or, with
 * `fails`, when it exits non-zero and `expect` matches its stderr. A failure is printed and recorded.
 */
async function node(title, args, { expect, fails = false, ...options } = {}) {
  let result;
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, args, { timeout: 600_000, maxBuffer: 16 << 20, ...options });
    result = { exited: 0, stdout, stderr };
  } catch (error) {
    result = { exited: error.code ?? error.signal ?? error.message, stdout: error.stdout ?? '', stderr: error.stderr ?? error.message };
  }
  const ok = (result.exited === 0) !== fails && (!expect || expect.test(fails ? result.stderr : result.stdout));
  console.log(ok ? `ok   ${title}` : `FAIL ${title} (exit ${result.exited})\n${result.stdout}${result.stderr}`);
  if (!ok) failures.push(title);
}

const npm = /npm-cli\.c?js$/.test(process.env.npm_execpath ?? '') ? [process.execPath, [process.env.npm_execpath]] : ['npm', []];
const runNpm = (args, cwd) => execFileSync(npm[0], [...npm[1], ...args], { cwd, stdio: ['ignore', 'pipe', 'inherit'], shell: process.platform === 'win32' && npm[0] === 'npm' });

const work = mkdtempSync(join(tmpdir(), 'relock-consumers-'));
let redis;
try {
  step('the tools (consumer-checks: npm ci) and the tarball (npm pack)');
  runNpm(['ci', '--no-audit', '--no-fund', '--loglevel=error'], checks);
  // RELOCK_TARBALL=<file.tgz> checks that tarball instead (another build, a published version).
  let tarball = process.env.RELOCK_TARBALL;
  if (!tarball) {
    const [packed] = JSON.parse(runNpm(['pack', '--json', '--ignore-scripts', '--pack-destination', work], root).toString());
    tarball = join(work, packed.filename);
    console.log(`${packed.filename}: ${packed.size} bytes packed, ${packed.unpackedSize} unpacked, ${packed.files.length} files`);
  }
  // The tarball as npm installs it: into consumer-checks/node_modules/relock, beside its dependencies.
  const relock = join(modules, 'relock');
  rmSync(relock, { recursive: true, force: true });
  mkdirSync(relock);
  execFileSync('tar', ['-xzf', tarball, '-C', relock, '--strip-components=1']);

  const { startRedis } = await import(pathToFileURL(join(relock, 'dist', 'testing.mjs')).href);
  redis = await startRedis({ sources: ['redis-server'] });
  const env = { ...process.env, REDIS_URL: undefined, NODE_PATH: '', NODE_OPTIONS: '' };
  delete env.REDIS_URL;

  step('Jest 30: CommonJS, ts-jest (CommonJS), ts-jest (ESM)');
  await node('jest', ['--experimental-vm-modules', join(modules, 'jest', 'bin', 'jest.js'), '--ci', '--colors=false', '--config', 'jest.config.cjs'], {
    cwd: checks,
    env: { ...env, NODE_NO_WARNINGS: '1' },
  });

  step('bundles run without node_modules: esbuild (ESM, CommonJS), webpack');
  const esbuild = await import(pathToFileURL(join(modules, 'esbuild', 'lib', 'main.js')).href);
  const apps = join(work, 'apps'); // no node_modules on the way up from here
  mkdirSync(apps);
  const app = join(checks, 'bundle', 'app.js');
  for (const format of ['esm', 'cjs']) {
    const outfile = join(apps, `esbuild.${format === 'esm' ? 'mjs' : 'cjs'}`);
    // ESM output: the usual banner gives bundled CommonJS (ioredis) its require of Node's modules.
    const banner = format === 'esm' ? { js: "import { createRequire as __relockCreateRequire } from 'node:module'; const require = __relockCreateRequire(import.meta.url);" } : undefined;
    await esbuild.build({ entryPoints: [app], bundle: true, platform: 'node', target: 'node20', format, outfile, banner, logLevel: 'error', absWorkingDir: checks });
    const locked = /^locked, then ERR_LOCK_TIMEOUT$/m;
    await node(`esbuild --format=${format}: locks over a URL with the ioredis option`, [outfile], { cwd: apps, env: { ...env, REDIS_URL: redis.url }, expect: locked });
    await node(`esbuild --format=${format}: without the option, a URL fails and says why`, [outfile], {
      cwd: apps,
      env: { ...env, REDIS_URL: redis.url, HAND_IOREDIS: '0' },
      fails: true,
      expect: /ioredis, which is not installed .*in a bundled app, hand relock the module/,
    });
  }
  const { default: webpack } = await import(pathToFileURL(join(modules, 'webpack', 'lib', 'index.js')).href);
  const stats = await new Promise((resolve, reject) =>
    webpack({
      mode: 'none',
      target: 'node20',
      context: checks,
      entry: app,
      output: { path: apps, filename: 'webpack.cjs' },
      optimization: { minimize: false },
      stats: 'errors-only',
    }).run((error, result) => (error ? reject(error) : resolve(result))),
  );
  if (stats.hasErrors()) {
    console.log(`FAIL webpack\n${stats.toString('errors-only')}`);
    failures.push('webpack');
  } else {
    await node('webpack: locks over a URL with the ioredis option', [join(apps, 'webpack.cjs')], { cwd: apps, env: { ...env, REDIS_URL: redis.url }, expect: /^locked, then ERR_LOCK_TIMEOUT$/m });
  }

  step('tsc, skipLibCheck false: node-redis only, GLIDE only, ioredis; module nodenext, node16, bundler');
  const tsc = join(modules, 'typescript', 'bin', 'tsc');
  const link = (from, to) => symlinkSync(from, to, 'dir');
  const projects = [
    ['node-redis', 'node-redis.ts', [[join(root, 'node_modules'), 'redis'], [join(root, 'node_modules'), '@redis']]],
    ['glide', 'glide.ts', [[join(root, 'node_modules'), '@valkey']]],
    ['ioredis', 'ioredis.ts', [[modules, 'ioredis']]],
  ];
  // The three projects side by side (each runs its three module modes in turn).
  await Promise.all(projects.map(async ([project, client, packages]) => {
    // A project of its own outside the repository: relock copied in (a link would resolve ioredis
    // beside consumer-checks), the client's packages linked.
    const dir = join(work, project);
    mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true });
    cpSync(relock, join(dir, 'node_modules', 'relock'), { recursive: true });
    for (const [from, name] of [...packages, [modules, '@types/node'], [modules, 'async-mutex'], [modules, 'p-timeout']]) link(join(from, name), join(dir, 'node_modules', name));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `app-${project}`, private: true, type: 'module' }));
    cpSync(join(checks, 'types', client), join(dir, 'index.ts'));
    for (const [module, moduleResolution] of [['nodenext', 'nodenext'], ['node16', 'node16'], ['esnext', 'bundler']]) {
      const config = join(dir, `tsconfig.${moduleResolution}.json`);
      const compilerOptions = { target: 'es2022', module, moduleResolution, strict: true, skipLibCheck: false, noEmit: true, types: ['node'], esModuleInterop: true };
      writeFileSync(config, JSON.stringify({ compilerOptions, files: ['index.ts'] }));
      await node(`tsc ${project} (module ${module}, moduleResolution ${moduleResolution})`, [tsc, '-p', config], { cwd: dir, env });
    }
  }));
} finally {
  await redis?.stop();
  rmSync(work, { recursive: true, force: true });
  rmSync(join(modules, 'relock'), { recursive: true, force: true });
}

console.log(`\n${failures.length ? `FAILED: ${failures.join('; ')}` : 'every consumer check passed'} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
process.exitCode = failures.length ? 1 : 0;
