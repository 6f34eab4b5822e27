import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, rejects } from '../../helpers/describe.ts';

const root = join(import.meta.dirname, '..', '..', '..');
const run = promisify(execFile);
const checkLinks = join(root, 'scripts', 'check-links.mjs');

// A user's project: an empty folder with the packed tarball unpacked as node_modules/relock, and
// relock's dependencies and ioredis (`npm i relock ioredis`, as the README says: an optional peer)
// linked from this repository (installing them would need the registry).
describe('relock/testing, from the packed tarball installed into an empty project', (it) => {
  let dir: string;
  let project: string;
  it.before(async () => {
    assert.ok(existsSync(join(root, 'dist', 'testing.mjs')), 'dist/testing.mjs is missing: npm test builds it first (npm run build)');
    dir = mkdtempSync(join(tmpdir(), 'relock-installed-'));
    const { stdout } = await run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: root, timeout: 30_000 });
    const tarball = join(dir, (JSON.parse(stdout) as [{ filename: string }])[0].filename);
    project = join(dir, 'project');
    const modules = join(project, 'node_modules');
    mkdirSync(modules, { recursive: true });
    await run('tar', ['-xzf', tarball, '-C', modules]);
    renameSync(join(modules, 'package'), join(modules, 'relock'));
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    for (const name of [...Object.keys(pkg.dependencies), 'ioredis', '@types/node']) {
      mkdirSync(join(modules, name, '..'), { recursive: true });
      symlinkSync(join(root, 'node_modules', name), join(modules, name), 'dir');
    }
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'user-project', private: true, type: 'module' }));
  });
  it.after(() => rmSync(dir, { recursive: true, force: true }));

  const program = `
    const redis = await startRedis();
    const client = new LockClient({ redis: redis.url });
    const lease = await client.lock('installed').acquire({ waitMs: 0 });
    await lease.release();
    await client.close();
    await redis.stop();
    console.log(typeof redis.port, lease.holdCount);
  `;

  it('imports relock/testing as ESM: a Redis that relock locks on, stopped at the end', async () => {
    writeFileSync(join(project, 'esm.mjs'), `import { LockClient } from 'relock';\nimport { startRedis } from 'relock/testing';\n${program}`);
    const { stdout } = await run(process.execPath, ['esm.mjs'], { cwd: project, timeout: 20_000 });
    assert.is(stdout.trim(), 'number 1');
  });

  it('requires relock/testing as CommonJS', async () => {
    writeFileSync(
      join(project, 'cjs.cjs'),
      `const { LockClient } = require('relock');\nconst { startRedis } = require('relock/testing');\n(async () => {${program}})();`,
    );
    const { stdout } = await run(process.execPath, ['cjs.cjs'], { cwd: project, timeout: 20_000 });
    assert.is(stdout.trim(), 'number 1');
  });

  it('types relock/testing for TypeScript users (module node16)', async () => {
    writeFileSync(
      join(project, 'typed.ts'),
      [
        "import { startRedis, type StartRedisOptions, type TestRedis, type RedisSource } from 'relock/testing';",
        "const options: StartRedisOptions = { sources: ['redis-server'], timeoutMs: 5000 };",
        'const redis: TestRedis = await startRedis(options);',
        'const source: RedisSource = redis.source;',
        'const url: string = redis.url;',
        'await redis[Symbol.asyncDispose]();',
        '// @ts-expect-error: not a source',
        "await startRedis({ sources: ['docker'] });",
        'export { source, url };',
      ].join('\n'),
    );
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const args = ['--noEmit', '--strict', '--module', 'node16', '--target', 'es2022', '--lib', 'es2023,esnext.disposable', '--types', 'node', 'typed.ts'];
    const result = await run(process.execPath, [tsc, ...args], { cwd: project, timeout: 60_000 }).catch((error: { stdout: string }) => error);
    assert.is(result.stdout, '', 'tsc reports no error');
  }, 60_000);

  it('ships every page the README and the docs link to: each relative link resolves in node_modules/relock', async () => {
    const { stdout } = await run(process.execPath, [checkLinks, join(project, 'node_modules', 'relock')], { timeout: 20_000 });
    assert.match(stdout, /every relative link of \d+ page\(s\) resolves/);
    for (const page of ['README.md', 'docs/testing.md', 'docs/reference/README.md']) {
      assert.ok(existsSync(join(project, 'node_modules', 'relock', page)), `${page} is in the package`);
    }
  });
});

// Issue 31, point 6: the range lagged testcontainers 12, which npm then refused (ERESOLVE) or overrode.
describe('relock/testing peer range', (it) => {
  /** The majors a range of caret alternatives (`^10.0.0 || ^11.0.0`) admits. */
  const majors = (range: string) =>
    range.split('||').map((part) => {
      const caret = /^\s*\^(\d+)\.0\.0\s*$/.exec(part);
      assert.ok(caret, `"${part.trim()}" is a ^N.0.0 alternative`);
      return Number(caret![1]);
    });

  it("admits testcontainers' newest major: npm's latest when the registry answers, else 12 (latest on 2026-12-07)", async () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { peerDependencies: Record<string, string> };
    const admitted = majors(pkg.peerDependencies.testcontainers!);
    let latest = 12;
    try {
      const { stdout } = await run('npm', ['view', 'testcontainers', 'version', '--prefer-online'], { cwd: root, timeout: 15_000 });
      latest = Math.max(latest, Number(stdout.trim().split('.')[0]));
    } catch (error) {
      console.log(`  (the registry did not answer: checked against major 12: ${(error as Error).message.split('\n')[0]})`);
    }
    for (let major = 10; major <= latest; major++) assert.ok(admitted.includes(major), `testcontainers ${major}.x is admitted by "${pkg.peerDependencies.testcontainers}"`);
  }, 30_000);
});

describe('scripts/check-links.mjs', (it) => {
  it('passes on the repository', async () => {
    const { stdout } = await run(process.execPath, [checkLinks], { cwd: root, timeout: 20_000 });
    assert.match(stdout, /^repository: every relative link of \d+ page\(s\) resolves/);
  });

  it('fails on a missing file, a missing heading, and a link leaving the package', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'relock-links-'));
    try {
      mkdirSync(join(dir, 'docs'));
      writeFileSync(join(dir, 'docs', 'guide.md'), '# Guide\n\n## `await using`: releases itself\n');
      writeFileSync(
        join(dir, 'README.md'),
        '# Top\n[ok](docs/guide.md#await-using-releases-itself) [ok](#top) `[code](nowhere.md)`\n' +
          '[gone](docs/gone.md) [anchor](docs/guide.md#no-such-heading) [out](../CHANGELOG.md)\n',
      );
      const failed = await rejects(run(process.execPath, [checkLinks, dir], { timeout: 20_000 }));
      const lines = String(failed.stderr).trim().split('\n').slice(1).map((line) => line.trim());
      assert.equal(lines, [
        'README.md:3: docs/gone.md: no such file (docs/gone.md)',
        'README.md:3: docs/guide.md#no-such-heading: no heading or anchor #no-such-heading in docs/guide.md',
        'README.md:3: ../CHANGELOG.md: points outside the package (to ../CHANGELOG.md)',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
