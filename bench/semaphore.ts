// relock's semaphore against redis-semaphore's Semaphore, in one run on a private Redis:
//   1. uncontended acquire+release, one loop in one process, slices interleaved between the two;
//   2. contended: 3 permits, 4 processes x 3 loops, hold 1 ms, think 3 ms: permit utilisation,
//      wait p50/p99/max, and the Redis commands per acquisition (INFO commandstats deltas).
// Each library runs in processes of its own (child processes of this one). Prints a table and
// writes it to docs/benchmarks/semaphore.md. About a minute:
//   cd bench && node --import tsx semaphore.ts
import { existsSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyBuild } from './lib/bundle.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { Semaphore as RedisSemaphore } from 'redis-semaphore';
import type { LockClient } from '../src/index.ts';
import { startRedis } from '../test/helpers/redis.ts';
import { now } from './lib/clock.ts';
import { parent, Worker } from './lib/fork.ts';
import { TARGETS } from './lib/plan.ts';
import { median, percentile } from './lib/stats.ts';

const PERMITS = 3;
const PROCESSES = 4;
const LOOPS = 3;
const HOLD_MS = 1;
const THINK_MS = 3;
/** BENCH_QUICK=1: a tenth of the durations, to check that the bench runs (its figures mean little). */
const SCALE = process.env.BENCH_QUICK === '1' ? 0.1 : 1;
const CONTENDED_MS = 4_000 * SCALE;
const CONTENDED_RUNS = 3;
const SLICE_MS = 1_500 * SCALE;
const SLICES = 5;
const LEASE_MS = 30_000;
/** redis-semaphore's polling interval: its fastest sensible setting, as in the main bench. */
const RETRY_MS = 10;

type Library = 'relock' | 'redis-semaphore';
const LIBRARIES: readonly Library[] = ['relock', 'redis-semaphore'];
/** The commands each library's client sends itself (the rest of commandstats is what its scripts call). */
const SENT: Record<Library, readonly string[]> = {
  relock: ['evalsha', 'eval', 'subscribe', 'unsubscribe'],
  'redis-semaphore': ['evalsha', 'eval', 'zrem'],
};

interface Held {
  release(): Promise<void>;
}
interface Adapter {
  acquire(name: string): Promise<Held>;
  close(): Promise<void>;
}

/**
 * relock as published, when dist/ has a build with the semaphore: copied at the start (RELOCK_BUNDLE)
 * beside bench/node_modules, so that a rebuild during the run cannot pull it from under the workers.
 * Else its TypeScript source, through tsx.
 */
function prepareRelock(): string {
  const dist = fileURLToPath(new URL('../dist/', import.meta.url));
  if (!existsSync(join(dist, 'index.mjs'))) return 'its TypeScript source (through tsx: no build in dist/)';
  process.env.RELOCK_BUNDLE = copyBuild(dist, fileURLToPath(new URL('./results/relock-dist-semaphore/', import.meta.url)));
  return 'the ESM bundle in dist/ (`npm run build`), on the bench\'s ioredis';
}

async function adapter(library: Library, url: string): Promise<Adapter> {
  if (library === 'relock') {
    const from = process.env.RELOCK_BUNDLE ?? new URL('../src/index.ts', import.meta.url).href;
    const { LockClient: Client } = (await import(from)) as { LockClient: typeof LockClient };
    const client = new Client({ redis: url, leaseMs: LEASE_MS });
    return {
      acquire: (name) => client.semaphore(name, { permits: PERMITS }).acquire(),
      close: () => client.close(),
    };
  }
  const redis = new Redis(url);
  return {
    async acquire(name) {
      // The identifier belongs to the Semaphore object: one object per acquire.
      const semaphore = new RedisSemaphore(redis, name, PERMITS, {
        lockTimeout: LEASE_MS,
        acquireTimeout: Number.POSITIVE_INFINITY,
        retryInterval: RETRY_MS,
      });
      await semaphore.acquire();
      return { release: () => semaphore.release() };
    },
    close: async () => void (await redis.quit()),
  };
}

// ---------------------------------------------------------------- worker (a child process)

type Interval = [enteredAt: number, leftAt: number];
interface Result {
  acquisitions: number;
  /** CPU time of the worker process over the run, in microseconds. */
  cpuMicros: number;
  waits: number[];
  intervals: Interval[];
}
type ToWorker = { type: 'go'; mode: 'uncontended' | 'contended'; endAt: number } | { type: 'close' };
type FromWorker = { type: 'ready' } | { type: 'result'; result: Result };

async function worker(library: Library, url: string): Promise<void> {
  const { send, next } = parent<ToWorker, FromWorker>();
  const lib = await adapter(library, url);
  // Warm-up on a name of its own: connections open, scripts load, code is compiled.
  for (let i = 0; i < 100; i++) await (await lib.acquire(`warmup:${process.pid}`)).release();
  send({ type: 'ready' });
  for (let message = await next('go', 'close'); message.type === 'go'; message = await next('go', 'close')) {
    const result: Result = { acquisitions: 0, cpuMicros: 0, waits: [], intervals: [] };
    const { endAt } = message;
    const cpu = process.cpuUsage();
    if (message.mode === 'uncontended') {
      while (now() < endAt) {
        await (await lib.acquire('uncontended')).release();
        result.acquisitions++;
      }
    } else {
      await Promise.all(
        Array.from({ length: LOOPS }, async () => {
          while (now() < endAt) {
            const calledAt = now();
            const held = await lib.acquire('contended');
            const enteredAt = now();
            result.waits.push(enteredAt - calledAt);
            await sleep(HOLD_MS);
            result.intervals.push([enteredAt, now()]);
            await held.release();
            result.acquisitions++;
            await sleep(THINK_MS);
          }
        }),
      );
    }
    const used = process.cpuUsage(cpu);
    result.cpuMicros = used.user + used.system;
    send({ type: 'result', result });
  }
  await lib.close();
  process.disconnect();
}

// ---------------------------------------------------------------- orchestrator

/** A worker process of one library (this file, forked with 'worker'). */
const forkWorker = (library: Library, url: string) => new Worker<ToWorker, FromWorker>(fileURLToPath(import.meta.url), ['worker', library, url]);

/** Redis's CPU seconds (user + system) since it started. */
async function redisCpu(admin: Redis): Promise<number> {
  const info = await admin.info('cpu');
  return Number(/used_cpu_user:([\d.]+)/.exec(info)?.[1] ?? 0) + Number(/used_cpu_sys:([\d.]+)/.exec(info)?.[1] ?? 0);
}

async function commandStats(admin: Redis): Promise<Map<string, number>> {
  const stats = new Map<string, number>();
  for (const match of (await admin.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (!/^(info|config\|.*)$/.test(match[1]!)) stats.set(match[1]!, Number(match[2]));
  }
  return stats;
}

interface Commands {
  total: number;
  sent: number;
  top: string;
}

function commandsPer(stats: Map<string, number>, library: Library, acquisitions: number): Commands {
  let total = 0;
  let sent = 0;
  for (const [name, calls] of stats) {
    total += calls;
    if (SENT[library].includes(name)) sent += calls;
  }
  const top = [...stats]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8)
    .map(([name, calls]) => `${name} ${(calls / acquisitions).toFixed(2)}`)
    .join(', ');
  return { total: total / acquisitions, sent: sent / acquisitions, top };
}

/** The most permits held at once over every process (the limit check), from the critical sections. */
function peak(intervals: readonly Interval[]): number {
  const events = intervals.flatMap(([enter, leave]) => [
    [enter, 1],
    [leave, -1],
  ]);
  events.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
  let inside = 0;
  let most = 0;
  for (const [, delta] of events) most = Math.max(most, (inside += delta!));
  return most;
}

interface Uncontended {
  opsPerSecond: number;
  commands: Commands;
  /** CPU per acquire+release, in microseconds: the client process's, and Redis's. */
  clientCpu: number;
  redisCpu: number;
}

async function uncontended(url: string, admin: Redis): Promise<Record<Library, Uncontended>> {
  const workers = Object.fromEntries(LIBRARIES.map((library) => [library, forkWorker(library, url)])) as Record<Library, Worker<ToWorker, FromWorker>>;
  for (const library of LIBRARIES) await workers[library].expect('ready');
  const rates: Record<Library, number[]> = { relock: [], 'redis-semaphore': [] };
  const counts: Record<Library, { acquisitions: number; stats: Map<string, number>; clientCpu: number; redisCpu: number }> = {
    relock: { acquisitions: 0, stats: new Map(), clientCpu: 0, redisCpu: 0 },
    'redis-semaphore': { acquisitions: 0, stats: new Map(), clientCpu: 0, redisCpu: 0 },
  };
  for (let slice = 0; slice < SLICES; slice++) {
    // Alternate which goes first, so that neither always runs on the warmer (or busier) machine.
    const order = slice % 2 === 0 ? LIBRARIES : [...LIBRARIES].reverse();
    for (const library of order) {
      await admin.config('RESETSTAT');
      const cpuBefore = await redisCpu(admin);
      const startedAt = now();
      workers[library].send({ type: 'go', mode: 'uncontended', endAt: startedAt + SLICE_MS });
      const message = await workers[library].expect('result');
      const elapsed = now() - startedAt;
      rates[library].push((message.result.acquisitions / elapsed) * 1000);
      counts[library].acquisitions += message.result.acquisitions;
      counts[library].clientCpu += message.result.cpuMicros;
      counts[library].redisCpu += ((await redisCpu(admin)) - cpuBefore) * 1e6;
      for (const [name, calls] of await commandStats(admin)) counts[library].stats.set(name, (counts[library].stats.get(name) ?? 0) + calls);
    }
  }
  await Promise.all(LIBRARIES.map((library) => workers[library].close()));
  return Object.fromEntries(
    LIBRARIES.map((library) => {
      const { acquisitions, stats, clientCpu, redisCpu: redis } = counts[library];
      return [library, { opsPerSecond: median(rates[library]), commands: commandsPer(stats, library, acquisitions), clientCpu: clientCpu / acquisitions, redisCpu: redis / acquisitions }];
    }),
  ) as Record<Library, Uncontended>;
}

interface Contended {
  opsPerSecond: number;
  utilisation: number;
  waitP50: number;
  waitP99: number;
  waitMax: number;
  peak: number;
  commands: Commands;
}

async function contended(library: Library, url: string, admin: Redis): Promise<Contended> {
  const workers = Array.from({ length: PROCESSES }, () => forkWorker(library, url));
  for (const worker of workers) await worker.expect('ready');
  await admin.config('RESETSTAT');
  const startedAt = now() + 50;
  const endAt = startedAt + CONTENDED_MS;
  for (const worker of workers) worker.send({ type: 'go', mode: 'contended', endAt });
  const results: Result[] = [];
  for (const worker of workers) results.push((await worker.expect('result')).result);
  const stats = await commandStats(admin);
  await Promise.all(workers.map((worker) => worker.close()));
  const acquisitions = results.reduce((sum, result) => sum + result.acquisitions, 0);
  const intervals = results.flatMap((result) => result.intervals);
  const waits = results.flatMap((result) => result.waits);
  // Permit time used inside the measured window, over the permits the window offered.
  const lastLeave = Math.max(...intervals.map(([, leave]) => leave));
  const held = intervals.reduce((sum, [enter, leave]) => sum + Math.max(0, Math.min(leave, lastLeave) - Math.max(enter, startedAt)), 0);
  return {
    opsPerSecond: (acquisitions / (lastLeave - startedAt)) * 1000,
    utilisation: held / (PERMITS * (lastLeave - startedAt)),
    waitP50: percentile(waits, 50),
    waitP99: percentile(waits, 99),
    waitMax: percentile(waits, 100),
    peak: peak(intervals),
    commands: commandsPer(stats, library, acquisitions),
  };
}

const f = (value: number, digits = 2) => (Number.isFinite(value) ? value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '–');
const ratio = (mine: number, theirs: number) => `${f(mine / theirs)}×`;

async function main(): Promise<void> {
  const load = loadavg()[0]!;
  const relockFrom = prepareRelock();
  const server = await startRedis({ private: true });
  const admin = server.connect();
  const startedAt = now();
  try {
    const version = /redis_version:(\S+)/.exec(await admin.info('server'))?.[1] ?? '?';
    process.stdout.write('uncontended ... ');
    const solo = await uncontended(server.url, admin);
    process.stdout.write('done\ncontended ... ');
    const runs: Record<Library, Contended[]> = { relock: [], 'redis-semaphore': [] };
    for (let run = 0; run < CONTENDED_RUNS; run++) {
      for (const library of run % 2 === 0 ? LIBRARIES : [...LIBRARIES].reverse()) {
        await admin.flushall();
        runs[library].push(await contended(library, server.url, admin));
      }
    }
    process.stdout.write('done\n\n');
    // The median run by p99 wait, per library (of three: neither the best nor the worst).
    const pick = (library: Library) => [...runs[library]].sort((a, b) => a.waitP99 - b.waitP99)[Math.floor(runs[library].length / 2)]!;
    const [r, s] = [pick('relock'), pick('redis-semaphore')];
    const rows = [
      ['uncontended acquire+release, ops/s (higher is better)', f(solo.relock.opsPerSecond, 0), f(solo['redis-semaphore'].opsPerSecond, 0), ratio(solo.relock.opsPerSecond, solo['redis-semaphore'].opsPerSecond)],
      ['uncontended client CPU µs/acq', f(solo.relock.clientCpu, 0), f(solo['redis-semaphore'].clientCpu, 0), ratio(solo.relock.clientCpu, solo['redis-semaphore'].clientCpu)],
      ['uncontended Redis CPU µs/acq', f(solo.relock.redisCpu, 0), f(solo['redis-semaphore'].redisCpu, 0), ratio(solo.relock.redisCpu, solo['redis-semaphore'].redisCpu)],
      ['uncontended Redis commands/acq, scripts\' inner ones included', f(solo.relock.commands.total), f(solo['redis-semaphore'].commands.total), ratio(solo.relock.commands.total, solo['redis-semaphore'].commands.total)],
      ['uncontended commands sent by the client/acq', f(solo.relock.commands.sent), f(solo['redis-semaphore'].commands.sent), ratio(solo.relock.commands.sent, solo['redis-semaphore'].commands.sent)],
      ['contended acquisitions/s', f(r.opsPerSecond, 0), f(s.opsPerSecond, 0), ratio(r.opsPerSecond, s.opsPerSecond)],
      ['contended permit utilisation (higher is better)', f(r.utilisation, 3), f(s.utilisation, 3), ratio(r.utilisation, s.utilisation)],
      ['contended wait p50 ms', f(r.waitP50), f(s.waitP50), ratio(r.waitP50, s.waitP50)],
      ['contended wait p99 ms (lower is better)', f(r.waitP99), f(s.waitP99), ratio(r.waitP99, s.waitP99)],
      ['contended wait max ms', f(r.waitMax), f(s.waitMax), ratio(r.waitMax, s.waitMax)],
      ['contended Redis commands/acq, scripts\' inner ones included (lower is better)', f(r.commands.total), f(s.commands.total), ratio(r.commands.total, s.commands.total)],
      ['contended commands sent by the clients/acq (lower is better)', f(r.commands.sent), f(s.commands.sent), ratio(r.commands.sent, s.commands.sent)],
      ['contended most permits held at once (limit 3)', String(r.peak), String(s.peak), ''],
    ];
    const table = [
      '| measure | relock | redis-semaphore 5.8.0 | relock / redis-semaphore |',
      '| --- | ---: | ---: | ---: |',
      ...rows.map((row) => `| ${row.join(' | ')} |`),
    ].join('\n');
    const allRuns = LIBRARIES.map(
      (library) =>
        `- ${library}: ${runs[library].map((run) => `p99 ${f(run.waitP99)} ms, utilisation ${f(run.utilisation, 3)}, ${f(run.commands.total)} commands/acq (${f(run.commands.sent)} sent)`).join('; ')}`,
    ).join('\n');
    const where = LIBRARIES.map((library) => `- ${library}, contended: ${pick(library).commands.top}\n- ${library}, uncontended: ${solo[library].commands.top}`).join('\n');
    const verdict = (ok: boolean) => (ok ? '**met**' : '**missed**');
    const targets = [
      '| target | measured | |',
      '| --- | --- | --- |',
      `| uncontended: at least level with redis-semaphore | ${ratio(solo.relock.opsPerSecond, solo['redis-semaphore'].opsPerSecond)} its ops/s | ${verdict(solo.relock.opsPerSecond >= TARGETS.semaphore.opsVsPeer * solo['redis-semaphore'].opsPerSecond)} |`,
      `| contended: ahead on p99 wait | ${ratio(r.waitP99, s.waitP99)} its p99 | ${verdict(r.waitP99 < s.waitP99)} |`,
      `| contended: ahead on Redis commands per acquisition | ${ratio(r.commands.total, s.commands.total)} its commands (scripts' inner ones included), ${ratio(r.commands.sent, s.commands.sent)} its commands sent | ${verdict(r.commands.total < s.commands.total && r.commands.sent < s.commands.sent)} |`,
    ].join('\n');
    const seconds = (now() - startedAt) / 1000;
    const report = `# Benchmark: relock's semaphore and redis-semaphore's Semaphore

Made by \`cd bench && node --import tsx semaphore.ts\` (${f(seconds, 0)} s) on ${cpus().length} cores
(load average ${f(load)} at the start), Node ${process.version}, a private Redis ${version}. Each library runs in
processes of its own; relock runs from ${relockFrom}, redis-semaphore 5.8.0 on
ioredis 6, both with 30 s leases. Ratios are relock's figure over redis-semaphore's.

- **Uncontended**: one process, one loop of acquire then release on one semaphore of ${PERMITS} permits,
  ${SLICES} slices of ${SLICE_MS / 1000} s per library interleaved; ops/s is the median slice.
- **Contended**: ${PERMITS} permits, ${PROCESSES} processes × ${LOOPS} loops, each loop acquiring, holding
  ${HOLD_MS} ms (a timer), releasing and thinking ${THINK_MS} ms, for ${CONTENDED_MS / 1000} s; ${CONTENDED_RUNS} runs
  per library, alternating which goes first, the median by p99 wait shown. *Utilisation* is the time
  permits spent inside critical sections over ${PERMITS} × the run. *Wait* is from \`acquire()\`
  called to resolved. redis-semaphore polls every ${RETRY_MS} ms (its \`retryInterval\`); relock waits
  for a release message.
- **Commands**: \`CONFIG RESETSTAT\` before the measured part, \`INFO commandstats\` after, over the
  acquisitions made. Redis counts the commands a script calls as commands of their own; "sent" counts
  only what the clients sent (relock: \`EVALSHA\`, \`EVAL\`, \`SUBSCRIBE\`, \`UNSUBSCRIBE\`;
  redis-semaphore: \`EVALSHA\`, \`EVAL\`, and its release, a plain \`ZREM\`).

${table}

${targets}

On a shared machine the uncontended ops/s ratio moves from run to run by tens of percent (it is the
figure most exposed to what else runs); the CPU per acquisition, client and Redis, is the steadier one.

**Why.** Uncontended, both make two round trips per acquire+release, but relock's client does more per
round (the Lease, its hold and watchdog registration, the acquire frame: the same layers as
\`lock()\`, which trails redis-semaphore's \`Mutex\` the same way in [benchmarks.md](../benchmarks.md)),
and its two scripts run 14 commands inside Redis (Redis \`TIME\`, the lease's end and the keys'
expiry, the fencing token, the release message) where redis-semaphore's acquire script runs 4 and
its release is a bare \`ZREM\`. Under contention, waiting on pub/sub instead of a 10 ms poll is what
shortens relock's tail wait and raises utilisation; its price is in commands: each release wakes
the head waiter of every process that waits, one of them wins, and each losing attempt is a script
call (3 commands inside); a polling waiter whose think time keeps it mostly out of the queue costs
redis-semaphore fewer attempts than that, each of 3 commands.

All contended runs:

${allRuns}

<details><summary>Where the commands come from: the commands called most, per acquisition</summary>

${where}

</details>
`;
    console.log(`${table}\n\n${targets}`);
    console.log(`\n${allRuns}\n\n${where}\n\nin ${f(seconds, 0)} s`);
    if (SCALE === 1) writeFileSync(new URL('../docs/benchmarks/semaphore.md', import.meta.url), report);
  } finally {
    admin.disconnect();
    await server.stop();
  }
}

if (process.argv[2] === 'worker') await worker(process.argv[3] as Library, process.argv[4]!);
else await main();
