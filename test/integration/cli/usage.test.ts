import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe } from '../../helpers/describe.ts';
import { CLI, relock, relockEach } from './cli.ts';

const root = join(import.meta.dirname, '..', '..', '..');

// Nothing here reaches Redis: usage errors are found before any I/O (the URL points nowhere).
const env = { REDIS_URL: 'redis://127.0.0.1:1' };

describe('relock usage', (it) => {
  // About 30 Node processes in all: on a loaded machine that takes a while.
  it('exits 64 with the usage on stderr for every usage error, never running the command', async () => {
    const cases = [
      [],
      ['frob'],
      ['run'],
      ['run', 'job'],
      ['run', 'job', 'echo', 'ran'],
      ['run', 'job', '--'],
      ['run', '--', 'echo', 'ran'],
      ['run', 'a', 'b', '--', 'echo', 'ran'],
      ['run', 'job', '--wait', 'soon', '--', 'echo', 'ran'],
      ['run', 'job', '--wait', '-1', '--', 'echo', 'ran'],
      ['run', 'job', '--lease', '10', '--', 'echo', 'ran'],
      ['run', 'job', '--at-least', '1000', '--keep', '1000', '--', 'echo', 'ran'],
      ['run', 'job', '--at-least', '2000', '--at-most', '1000', '--', 'echo', 'ran'],
      ['run', 'job', '--at-least', '1000', '--fair', '--', 'echo', 'ran'],
      ['run', 'job', '--no-such-option', '--', 'echo', 'ran'],
      ['run', 'job', '--redis', 'http://127.0.0.1:6379', '--', 'echo', 'ran'],
      ['status'],
      ['status', 'a', 'b'],
      ['status', 'job', '--prefix', ''],
      ['unlock'],
      ['unlock', 'job', '--wait', '10'],
    ];
    const results = await relockEach(cases, env);
    results.forEach((result, i) => {
      const args = cases[i]!.join(' ');
      assert.is(result.code, 64, `relock ${args} exits 64 (${result.stderr})`);
      assert.is(result.stdout, '', `relock ${args} prints nothing on stdout`);
      assert.match(result.stderr, /Usage|relock --help/, `relock ${args} shows the usage`);
    });
    const badEnv = await relock(['status', 'job'], { REDIS_URL: 'localhost:6379' });
    assert.is(badEnv.code, 64);
    assert.match(badEnv.stderr, 'REDIS_URL must be a redis:// or rediss:// URL');
  }, 60_000);

  it('prints help for relock and each command on stdout and exits 0', async () => {
    const cases: [string[], string][] = [
      [['--help'], 'relock run <name>'],
      [['-h'], 'relock status <name>'],
      [['help', 'status'], 'Usage: relock status <name>'],
      [['run', '--help'], 'Usage: relock run <name>'],
      [['run', 'job', '-h', '--', 'true'], 'RELOCK_FENCING_TOKEN'],
      [['status', '--help'], 'TTL <ms>'],
      [['unlock', '--help'], 'Usage: relock unlock <name>'],
    ];
    const results = await relockEach(cases.map(([args]) => args), env);
    results.forEach((result, i) => {
      const [args, text] = cases[i]!;
      assert.is(result.code, 0, `relock ${args.join(' ')} exits 0`);
      assert.match(result.stdout, text, `relock ${args.join(' ')} prints its help`);
      assert.is(result.stderr, '');
    });
    assert.match((await relock(['--version'], env)).stdout, /^\d+\.\d+\.\d+/);
  }, 60_000);

  // Issue 31, point 5: a project with node-redis or GLIDE alone got "unexpected error" and a stack.
  it('says ioredis is not installed and exits 78, without a stack, in a project without ioredis', async () => {
    const preload = join(import.meta.dirname, 'without-ioredis.cjs');
    const without = { ...env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --require ${JSON.stringify(preload)}` };
    const results = await relockEach([['status', 'job'], ['unlock', 'job'], ['run', 'job', '--', 'true']], without);
    for (const result of results) {
      assert.is(result.code, 78, `exits 78 (EX_CONFIG): ${result.stderr}`);
      assert.match(result.stderr, /^relock: the relock command connects to Redis with ioredis, which is not installed here: `npm install ioredis`/);
      assert.is(result.stderr.trim().split('\n').length, 1, `one line, no stack: ${result.stderr}`);
      assert.not.match(result.stderr, /unexpected error|node-redis client/);
    }
    // --help needs no Redis, so no ioredis either.
    assert.is((await relock(['status', '--help'], without)).code, 0);
  }, 60_000);

  it('is the package\'s bin: dist/cli.mjs, with a shebang, shipped in the tarball', async () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bin?: Record<string, string> };
    assert.equal(pkg.bin, { relock: './dist/cli.mjs' });
    assert.ok(readFileSync(CLI, 'utf8').startsWith('#!/usr/bin/env node\n'), 'dist/cli.mjs starts with a shebang');
    const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, timeout: 30_000 });
    const files = (JSON.parse(stdout) as [{ files: { path: string }[] }])[0].files.map((file) => file.path);
    assert.ok(files.includes('dist/cli.mjs'), 'the tarball has dist/cli.mjs');
  }, 40_000);
});
