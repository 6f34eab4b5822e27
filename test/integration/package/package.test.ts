import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe } from '../../helpers/describe.ts';
import { startRedis, type RedisServer } from '../../helpers/redis.ts';

const root = join(import.meta.dirname, '..', '..', '..');
let server: RedisServer;

// What a user of the published package runs: the built bundles, not src/.
const program = (load: string) => `
  const { LockClient, LockTimeoutError } = ${load};
  const client = new LockClient({ redis: process.env.REDIS_URL });
  const lock = client.lock('package-test');
  const lease = await lock.acquire({ waitMs: 1000 });
  const nested = await lease.run(() => lock.acquire({ waitMs: 0 }));
  const timeout = await client.lock('package-test').acquire({ waitMs: 50 }).catch((e) => e);
  await nested.release();
  await lease.release();
  await client.close();
  console.log(nested.holdCount, timeout instanceof LockTimeoutError, timeout.code);
`;

describe('built package', (it) => {
  it.before(async () => {
    server = await startRedis();
  });
  it.after(() => server.stop());

  // CommonJS without require(esm) too, as Jest and older loaders load it: the bundle requires no ES module.
  for (const [format, file, load, flags] of [
    ['CommonJS', 'dist/index.cjs', `require(${JSON.stringify(join(root, 'dist', 'index.cjs'))})`, []],
    ['CommonJS (no require(esm))', 'dist/index.cjs', `require(${JSON.stringify(join(root, 'dist', 'index.cjs'))})`, ['--no-experimental-require-module']],
    ['ESM', 'dist/index.mjs', `await import(${JSON.stringify(join(root, 'dist', 'index.mjs'))})`, []],
  ] as const) {
    it(`locks, re-enters and times out through the ${format} bundle`, async () => {
      assert.ok(existsSync(join(root, file)), `${file} is missing: npm test builds it first (npm run build)`);
      const code = format.startsWith('CommonJS') ? `(async () => { ${program(load)} })()` : program(load);
      const { stdout } = await promisify(execFile)(
        process.execPath,
        format.startsWith('CommonJS') ? [...flags, '-e', code] : ['--input-type=module', '-e', code],
        { env: { ...process.env, REDIS_URL: server.url }, timeout: 15_000 },
      );
      assert.is(stdout.trim(), '2 true ERR_LOCK_TIMEOUT');
    });
  }
});

// A project with node-redis and without ioredis: relock's bundles copied into its node_modules (a copy,
// so that nothing resolves up to the repository's own ioredis), its dependencies and node-redis linked.
const nodeRedisProgram = (load: string) => `
  const { LockClient } = ${load};
  const { startRedis } = ${load.replace("'relock'", "'relock/testing'")};
  const { createClient } = require('redis');
  const server = await startRedis(); // REDIS_URL, checked with a plain PING
  const redis = await createClient({ url: server.url }).connect();
  const client = new LockClient({ redis });
  const lease = await client.lock('package-node-redis').acquire({ waitMs: 1000 });
  const waiting = client.lock('package-node-redis').acquire({ waitMs: 5000 });
  setTimeout(() => lease.release(), 100);
  await (await waiting).release();
  await client.close();
  const leftOpen = redis.isOpen;
  let missing;
  try { new LockClient({ redis: process.env.REDIS_URL }); } catch (error) { missing = error; }
  let ioredis = 'absent';
  try { require.resolve('ioredis'); ioredis = 'present'; } catch {}
  await redis.close();
  await server.stop();
  console.log(ioredis, leftOpen, missing instanceof TypeError, /ioredis/.test(missing.message));
`;

describe('the package with node-redis and without ioredis', (it) => {
  let project: string;
  let redis: RedisServer;
  it.before(async () => {
    redis = await startRedis();
    project = mkdtempSync(join(tmpdir(), 'relock-node-redis-'));
    const modules = join(project, 'node_modules');
    mkdirSync(join(modules, 'relock'), { recursive: true });
    cpSync(join(root, 'dist'), join(modules, 'relock', 'dist'), { recursive: true });
    cpSync(join(root, 'package.json'), join(modules, 'relock', 'package.json'));
    mkdirSync(join(modules, '@redis'));
    for (const dep of ['async-mutex', 'p-timeout', 'redis', 'cluster-key-slot', 'tslib']) {
      if (existsSync(join(root, 'node_modules', dep))) symlinkSync(join(root, 'node_modules', dep), join(modules, dep), 'dir');
    }
    for (const dep of ['client', 'bloom', 'json', 'search', 'time-series']) symlinkSync(join(root, 'node_modules', '@redis', dep), join(modules, '@redis', dep), 'dir');
    writeFileSync(join(project, 'package.json'), '{ "name": "app", "private": true }');
  });
  it.after(async () => {
    rmSync(project, { recursive: true, force: true });
    await redis.stop();
  });

  for (const format of ['CommonJS', 'ESM'] as const) {
    it(`locks and wakes over a node-redis client through the ${format} bundle (relock/testing too), and says a URL needs ioredis`, async () => {
      const load = format === 'CommonJS' ? "require('relock')" : "await import('relock')";
      const code = format === 'CommonJS' ? `(async () => { ${nodeRedisProgram(load)} })()` : `import { createRequire } from 'node:module'; const require = createRequire(process.cwd() + '/');\n${nodeRedisProgram(load)}`;
      const { stdout } = await promisify(execFile)(process.execPath, format === 'CommonJS' ? ['-e', code] : ['--input-type=module', '-e', code], {
        cwd: project,
        env: { ...process.env, REDIS_URL: redis.url, NODE_PATH: '' },
        timeout: 15_000,
      });
      assert.is(stdout.trim(), 'absent true true true');
    });
  }
});

// A project with GLIDE and without ioredis or node-redis: GLIDE linked (its own dependencies resolve
// beside its real path), relock's bundles copied.
const glideProgram = (load: string) => `
  const { LockClient } = ${load};
  const { GlideClient, Logger } = require('@valkey/valkey-glide');
  Logger.setLoggerConfig('off');
  const url = new URL(process.env.REDIS_URL);
  const redis = await GlideClient.createClient({ addresses: [{ host: url.hostname, port: Number(url.port) }], requestTimeout: 2000 });
  const client = new LockClient({ redis });
  const lease = await client.lock('package-glide').acquire({ waitMs: 1000 });
  const waiting = client.lock('package-glide').acquire({ waitMs: 5000 });
  setTimeout(() => lease.release(), 100);
  await (await waiting).release();
  await client.close();
  const present = (name) => { try { require.resolve(name); return 'present'; } catch { return 'absent'; } };
  console.log(present('ioredis'), present('redis'), await redis.customCommand(['PING']));
  redis.close();
`;

describe('the package with GLIDE and without ioredis or node-redis', (it) => {
  let project: string;
  let redis: RedisServer;
  it.before(async () => {
    redis = await startRedis();
    project = mkdtempSync(join(tmpdir(), 'relock-glide-'));
    const modules = join(project, 'node_modules');
    mkdirSync(join(modules, 'relock'), { recursive: true });
    mkdirSync(join(modules, '@valkey'));
    cpSync(join(root, 'dist'), join(modules, 'relock', 'dist'), { recursive: true });
    cpSync(join(root, 'package.json'), join(modules, 'relock', 'package.json'));
    for (const dep of ['async-mutex', 'p-timeout', 'tslib', '@valkey/valkey-glide']) {
      if (existsSync(join(root, 'node_modules', dep))) symlinkSync(join(root, 'node_modules', dep), join(modules, dep), 'dir');
    }
    writeFileSync(join(project, 'package.json'), '{ "name": "app", "private": true }');
  });
  it.after(async () => {
    rmSync(project, { recursive: true, force: true });
    await redis.stop();
  });

  for (const format of ['CommonJS', 'ESM'] as const) {
    it(`locks and wakes over a GLIDE client through the ${format} bundle`, async () => {
      const load = format === 'CommonJS' ? "require('relock')" : "await import('relock')";
      const code = format === 'CommonJS' ? `(async () => { ${glideProgram(load)} })()` : `import { createRequire } from 'node:module'; const require = createRequire(process.cwd() + '/');\n${glideProgram(load)}`;
      const { stdout } = await promisify(execFile)(process.execPath, format === 'CommonJS' ? ['-e', code] : ['--input-type=module', '-e', code], {
        cwd: project,
        env: { ...process.env, REDIS_URL: redis.url, NODE_PATH: '' },
        timeout: 15_000,
      });
      assert.is(stdout.trim(), 'absent absent PONG');
    });
  }
});

describe('the package as installed', (it) => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };

  it('ships the docs and the changelog, and every relative README link resolves inside the tarball', async () => {
    const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, timeout: 30_000 });
    const files = new Set((JSON.parse(stdout) as [{ files: { path: string }[] }])[0].files.map((file) => file.path));
    for (const file of ['README.md', 'CHANGELOG.md', 'LICENSE', 'docs/guide.md', 'docs/api.md', 'docs/errors.md', 'docs/guarantees.md']) {
      assert.ok(files.has(file), `${file} is in the package`);
    }
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const links = [...readme.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((match) => match[1]!).filter((target) => !/^[a-z]+:/i.test(target));
    assert.ok(links.length >= 5, 'the README links into docs/');
    assert.equal(links.filter((link) => !files.has(link)), [], 'README links to files the package lacks');
  }, 40_000);

  it('ships no source map, and the relock command imports the library\'s build instead of a copy of it', async () => {
    const { stdout } = await promisify(execFile)('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, timeout: 30_000 });
    const files = (JSON.parse(stdout) as [{ files: { path: string }[] }])[0].files.map((file) => file.path);
    assert.equal(files.filter((file) => file.endsWith('.map')), []);
    const cli = readFileSync(join(root, 'dist', 'cli.mjs'), 'utf8');
    assert.match(cli, /^import .* from '\.\/chunks\/[\w-]+\.mjs';$/m, 'dist/cli.mjs imports the chunk dist/index.mjs exports from');
    assert.not.match(cli, /class LockClient\b/, 'dist/cli.mjs has no LockClient of its own');
    const index = readFileSync(join(root, 'dist', 'index.mjs'), 'utf8');
    const chunks = [...cli.matchAll(/from '\.\/(chunks\/[\w-]+\.mjs)'/g)].map((match) => match[1]);
    assert.ok(chunks.every((chunk) => index.includes(`'./${chunk}'`)), 'every chunk the command imports is the library\'s');
  }, 40_000);

  it('check:package leaves a tarball in the working tree alone (a user\'s own `npm pack` output too)', async () => {
    const tarball = join(root, `relock-${pkg.version}.tgz`);
    // A tarball the user packed stays as it is; without one, the test puts its own there and removes it.
    const own = !existsSync(tarball);
    if (own) writeFileSync(tarball, 'a user tarball');
    const before = readFileSync(tarball);
    try {
      await promisify(execFile)(process.execPath, [join(root, 'scripts', 'check-package.mjs')], { cwd: root, timeout: 90_000 });
      assert.ok(readFileSync(tarball).equals(before), `${tarball} was changed`);
    } finally {
      if (own) rmSync(tarball, { force: true });
    }
  }, 100_000);

  it('names its repository, home page and issue tracker, and its changelog dates the version it is', () => {
    const meta = pkg as unknown as { repository?: { type?: string; url?: string }; homepage?: string; bugs?: { url?: string } };
    assert.match(meta.repository?.url ?? '', /^git\+https:\/\/github\.com\/[^/]+\/relock\.git$/, 'repository.url (npm publish --provenance needs it)');
    assert.is(meta.repository?.type, 'git');
    assert.ok(meta.homepage?.startsWith(meta.repository!.url!.slice(4, -4)), 'homepage is in the repository');
    assert.is(meta.bugs?.url, `${meta.repository!.url!.slice(4, -4)}/issues`);
    const changelog = readFileSync(join(root, 'CHANGELOG.md'), 'utf8');
    const heading = new RegExp(`^## ${pkg.version.replaceAll('.', '\\.')} \\(\\d{4}-\\d{2}-\\d{2}\\)$`, 'm');
    assert.match(changelog, heading, `CHANGELOG.md has "## ${pkg.version} (YYYY-MM-DD)"`);
    assert.ok(changelog.indexOf('## Unreleased') < changelog.search(heading), 'the Unreleased part comes first');
  });
});

