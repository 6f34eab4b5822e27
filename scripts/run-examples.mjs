// npm run examples: runs every example of examples/ (but diagnostics, which the tests run) against
// one Redis and checks its outcome, including that each check fails without the lock (--no-lock).
// Redis: REDIS_URL, else a private redis-server, else Docker (relock/testing's startRedis).
//
//   node scripts/run-examples.mjs           # the examples as they are in the repository (after npm run build)
//   node scripts/run-examples.mjs --packed  # copied into an empty project that installed the packed tarball
//                                           # (npm install of the tarball, ioredis, tsx and the framework examples' packages:
//                                           # needs the registry or npm's cache)
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startRedis } from 'relock/testing';

const root = fileURLToPath(new URL('..', import.meta.url));
const packed = process.argv.includes('--packed');

/** What each run must end with: its exit code and a line of its output. */
const CASES = [
  { file: 'flash-sale/main.ts', code: 0, says: /^OK: never oversold$/m },
  { file: 'flash-sale/main.ts', args: ['--no-lock'], code: 1, says: /^OVERSOLD/m },
  { file: 'payments/main.ts', code: 0, says: /^OK: each account took its payments one at a time/m },
  { file: 'payments/main.ts', args: ['--no-lock'], code: 1, says: /^INTERLEAVED/m },
  { file: 'nightly-report/main.ts', code: 0, says: /^OK: each fire ran on one node of three/m },
  { file: 'nightly-report/main.ts', args: ['--no-lock'], code: 1, says: /^WRONG: the fires ran 3, 3 times$/m },
  { file: 'nightly-report/cron.sh', code: 0, says: /^OK: one node of three built the report$/m, also: (out) => (out.match(/relock exited 75$/gm) ?? []).length === 2 },
  { file: 'leader/main.ts', code: 0, says: /^OK: one leader at a time/m },
  { file: 'leader/main.ts', args: ['--no-lock'], code: 1, says: /^TWO LEADERS/m },
  { file: 'form-submit/main.ts', code: 0, says: /^OK: inserted once/m },
  { file: 'form-submit/main.ts', args: ['--no-lock'], code: 1, says: /^DUPLICATE/m },
  // The guides' examples (docs/choosing-timeouts.md, docs/migrating.md, docs/frameworks.md).
  { file: 'choosing-timeouts/main.ts', code: 0, says: /^OK: a bounded wait, a renewed lease, a fixed lease that ended$/m },
  { file: 'migrating/main.ts', code: 0, says: /^OK: each loss reported where the old library reported it$/m },
  { file: 'express/main.ts', code: 0, says: /^OK: charged once, four duplicates refused with 409$/m },
  { file: 'express/main.ts', args: ['--no-lock'], code: 1, says: /^CHARGED 5 TIMES/m },
  { file: 'fastify/main.ts', code: 0, says: /^OK: every restock counted$/m },
  { file: 'fastify/main.ts', args: ['--no-lock'], code: 1, says: /^LOST UPDATES/m },
  { file: 'nestjs/main.ts', code: 0, says: /^OK: the builds ran one at a time$/m },
  { file: 'nestjs/main.ts', args: ['--no-lock'], code: 1, says: /^OVERLAPPED/m },
  { file: 'otel-prometheus/main.ts', code: 0, says: /^OK: relock lease metrics on \/metrics/m },
];
const EXAMPLES = ['flash-sale', 'payments', 'nightly-report', 'leader', 'form-submit', 'choosing-timeouts', 'migrating', 'express', 'fastify', 'nestjs', 'otel-prometheus'];
/** What the framework examples import, installed beside the tarball at the repository's versions (devDependencies). */
const FRAMEWORKS = ['express', 'fastify', '@nestjs/common', '@nestjs/core', 'reflect-metadata', 'rxjs', 'node-cron'];
// What otel-prometheus needs besides relock (Node 20: sdk-metrics 2.x, exporter-prometheus 0.2xx).
const OTEL = ['@opentelemetry/api@^1.9.0', '@opentelemetry/sdk-metrics@^2.12.1', '@opentelemetry/exporter-prometheus@~0.223.0'];

function npm(args, cwd) {
  return execFileSync('npm', args, { cwd, stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
}

/** An empty project with the packed tarball (and ioredis, tsx) installed and the examples copied in. */
function installPacked(dir) {
  const [{ filename }] = JSON.parse(npm(['pack', '--json', '--pack-destination', dir], root));
  const project = join(dir, 'project');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'relock-examples', private: true, type: 'module' }, null, 2));
  const { devDependencies } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const frameworks = FRAMEWORKS.map((name) => `${name}@${devDependencies[name]}`);
  npm(['install', '--no-audit', '--no-fund', '--prefer-offline', join(dir, filename), 'ioredis', 'tsx', ...frameworks, ...OTEL], project);
  for (const example of EXAMPLES) cpSync(join(root, 'examples', example), join(project, example), { recursive: true });
  // tsx reads the decorator setting (NestJS) from the tsconfig.json of the working directory.
  cpSync(join(root, 'examples', 'tsconfig.json'), join(project, 'tsconfig.json'));
  console.log(`installed ${filename} into ${project}`);
  return project;
}

function run(cwd, file, args, env) {
  const [command, argv] = file.endsWith('.sh') ? ['bash', [file, ...args]] : [process.execPath, ['--import', 'tsx', file, ...args]];
  return new Promise((resolve) => {
    const child = spawn(command, argv, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? signal, output });
    });
  });
}

const dir = packed ? mkdtempSync(join(tmpdir(), 'relock-examples-')) : undefined;
const redis = await startRedis();
let failed = 0;
try {
  const cwd = dir ? installPacked(dir) : join(root, 'examples');
  const env = { ...process.env, REDIS_URL: redis.url, ...(dir ? { RELOCK: join(cwd, 'node_modules', '.bin', 'relock') } : {}) };
  for (const { file, args = [], code, says, also } of CASES) {
    const title = `examples/${file}${args.length ? ` ${args.join(' ')}` : ''}`;
    const result = await run(cwd, file, args, env);
    const ok = result.code === code && says.test(result.output) && (also?.(result.output) ?? true);
    if (!ok) failed++;
    console.log(`\n${ok ? 'ok  ' : 'FAIL'} ${title} (exit ${result.code}, expected ${code})\n${result.output.replace(/^/gm, '     ').trimEnd()}`);
  }
} finally {
  // relock/testing unref()s its redis-server: keep this process up until stop() has seen it exit.
  const up = setInterval(() => {}, 1_000);
  await redis.stop();
  clearInterval(up);
  if (dir) rmSync(dir, { recursive: true, force: true });
}
console.log(`\nexamples: ${CASES.length - failed} passed, ${failed} failed${packed ? ' (from the packed tarball)' : ''}`);
if (failed > 0) process.exitCode = 1;
