// Redlock over 3 and 5 masters: relock against redlock 4.2.0, @sesamecare-oss/redlock 1.4.0 and
// redlock-universal 0.8.5, uncontended (one process, acquire + release in a loop) and contended
// (child processes on one lock name). Standalone, about 1-2 minutes:
//
//   cd bench && node --import tsx redlock.ts [--quick] [--no-write] [--only relock,redlock]
//
// Every master is a private redis-server on this machine. Prints a table with ratios to relock and
// writes docs/benchmarks/redlock.md (not with --quick or --no-write).
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { startPrivateRedis, type RedisServer } from '../test/helpers/redis.ts';
import { now } from './lib/clock.ts';
import { parent, Worker } from './lib/fork.ts';
import { percentile } from './lib/stats.ts';

const LIBS = ['relock', 'fair', 'redlock', 'sesame', 'universal'] as const;
/** The semaphores over several masters: relock's (permits as slots) and redis-semaphore's RedlockSemaphore. */
const SEM_LIBS = ['sem', 'rsem'] as const;
type Lib = (typeof LIBS)[number] | (typeof SEM_LIBS)[number];
const PACKAGES: Record<Lib, string> = {
  relock: 'relock (this tree)',
  fair: 'relock fairLock (this tree)',
  redlock: 'redlock 4.2.0',
  sesame: '@sesamecare-oss/redlock 1.4.0',
  universal: 'redlock-universal 0.8.5',
  sem: 'relock semaphore (this tree)',
  rsem: 'redis-semaphore 5.8.0 RedlockSemaphore',
};
/** The semaphores' limit. */
const PERMITS = 3;
/** The polling peers' retry interval: their fastest sensible setting (as in bench/adapters). */
const RETRY_MS = 10;
const LEASE_MS = 30_000;
/** Each worker process loops alone on a name of its own this long before the run starts. */
const WARM_MS = 500;

interface Held {
  release(): Promise<void>;
}
interface Client {
  acquire(name: string): Promise<Held>;
  close(): Promise<void>;
}

async function makeClient(lib: Lib, urls: string[]): Promise<Client> {
  if (lib === 'relock' || lib === 'fair' || lib === 'sem') {
    const { LockClient } = await import('../src/index.ts');
    const client = new LockClient({ redis: urls });
    client.on('error', () => undefined);
    const make = (name: string) => (lib === 'relock' ? client.lock(name) : lib === 'fair' ? client.fairLock(name) : client.semaphore(name, { permits: PERMITS }));
    return { acquire: (name) => make(name).acquire(), close: () => client.close() };
  }
  const connections = urls.map((url) => new Redis(url));
  for (const connection of connections) connection.on('error', () => undefined);
  const close = async () => void (await Promise.all(connections.map((connection) => connection.quit())));
  if (lib === 'redlock') {
    const { default: Redlock } = await import('redlock');
    const redlock = new Redlock(connections, { retryCount: -1, retryDelay: RETRY_MS, retryJitter: RETRY_MS / 2 });
    redlock.on('clientError', () => undefined);
    return {
      async acquire(name) {
        const lock = await redlock.lock(name, LEASE_MS);
        return { release: async () => void (await lock.unlock()) };
      },
      close,
    };
  }
  if (lib === 'rsem') {
    const { RedlockSemaphore } = await import('redis-semaphore');
    return {
      async acquire(name) {
        const semaphore = new RedlockSemaphore(connections, name, PERMITS, { lockTimeout: LEASE_MS, acquireTimeout: 60_000, retryInterval: RETRY_MS, refreshInterval: 0 });
        await semaphore.acquire();
        return { release: () => semaphore.release() };
      },
      close,
    };
  }
  if (lib === 'sesame') {
    const { Redlock } = await import('@sesamecare-oss/redlock');
    const redlock = new Redlock(connections, { retryCount: -1, retryDelay: RETRY_MS, retryJitter: RETRY_MS / 2 });
    redlock.on('error', () => undefined);
    return {
      async acquire(name) {
        const lock = await redlock.acquire([name], LEASE_MS);
        return { release: async () => void (await lock.release()) };
      },
      close,
    };
  }
  const { createRedlock, IoredisAdapter } = await import('redlock-universal');
  const adapters = connections.map((connection) => new IoredisAdapter(connection));
  const locks = new Map<string, ReturnType<typeof createRedlock>>();
  return {
    async acquire(name) {
      let lock = locks.get(name);
      if (!lock) {
        lock = createRedlock({ adapters, key: name, ttl: LEASE_MS, retryAttempts: Number.MAX_SAFE_INTEGER, retryDelay: RETRY_MS });
        locks.set(name, lock);
      }
      const owned = lock;
      const handle = await owned.acquire();
      return { release: async () => void (await owned.release(handle)) };
    },
    close,
  };
}

// --- worker: one process of a run

interface WorkerResult {
  acquisitions: number;
  waits: number[];
  /** [start, end] of each hold on the shared monotonic clock (lib/clock.ts), in ms. */
  holds: [number, number][];
  errors: number;
}
type ToWorker = { type: 'go' };
type FromWorker = { type: 'ready' } | { type: 'result'; result: WorkerResult };

async function worker(lib: Lib, urls: string[], name: string, durationMs: number, loops: number, holdMs: number, thinkMs: number): Promise<void> {
  const { send, next } = parent<ToWorker, FromWorker>();
  const client = await makeClient(lib, urls);
  // Warm up (connections, scripts loaded, the JIT) on a name of its own, the same for every library:
  // the run measures the steady state.
  const warmUntil = performance.now() + WARM_MS;
  while (performance.now() < warmUntil) await (await client.acquire(`${name}:warm:${process.pid}`)).release();
  send({ type: 'ready' });
  await next('go');
  const result: WorkerResult = { acquisitions: 0, waits: [], holds: [], errors: 0 };
  const until = performance.now() + durationMs;
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const loop = async () => {
    while (performance.now() < until) {
      const started = performance.now();
      let held: Held;
      try {
        held = await client.acquire(name);
      } catch {
        result.errors++;
        continue;
      }
      const start = now();
      result.waits.push(performance.now() - started);
      if (holdMs > 0) await sleep(holdMs);
      const end = now();
      await held.release().catch(() => result.errors++);
      result.holds.push([start, end]);
      result.acquisitions++;
      if (thinkMs > 0) await sleep(thinkMs);
    }
  };
  // A library whose acquire hangs (a lease left behind by a partial acquisition) does not hold the
  // run up: after the duration and 2 s more, what was measured is sent and the worker exits.
  let timer: NodeJS.Timeout | undefined;
  const cut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), durationMs + 2_000)));
  const stuck = await Promise.race([Promise.all(Array.from({ length: loops }, loop)).then(() => false), cut]);
  clearTimeout(timer);
  if (stuck) result.errors += loops;
  else await Promise.race([client.close(), new Promise((resolve) => setTimeout(resolve, 1_000))]);
  // Exits as soon as the result is out: a stuck library's loops would go on calling the masters.
  await send({ type: 'result', result });
  process.exit(0);
}

// --- orchestrator

interface RunResult {
  acquisitions: number;
  perSecond: number;
  p50: number;
  p99: number;
  max: number;
  commandsPerAcquisition: number;
  overlaps: number;
  /** The most holds at once (a lock: 1; a semaphore: at most its permits). */
  peak: number;
  errors: number;
}

async function commandCalls(admins: Redis[]): Promise<number> {
  let total = 0;
  for (const admin of admins) {
    const info = await admin.info('commandstats');
    for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      if (!['info', 'config', 'quit', 'client', 'hello', 'select', 'ping'].includes(match[1]!)) total += Number(match[2]);
    }
  }
  return total;
}

interface Shape {
  processes: number;
  loops: number;
  holdMs: number;
  thinkMs: number;
}

async function run(lib: Lib, urls: string[], admins: Redis[], durationMs: number, shape: Shape): Promise<RunResult> {
  const { processes: workers } = shape;
  const name = `bench:${lib}:${Math.random().toString(36).slice(2)}`;
  const args = ['--worker', lib, JSON.stringify(urls), name, String(durationMs), String(shape.loops), String(shape.holdMs), String(shape.thinkMs)];
  const children = Array.from({ length: workers }, () => new Worker<ToWorker, FromWorker>(fileURLToPath(import.meta.url), args));
  await Promise.all(children.map((child) => child.expect('ready')));
  await Promise.all(admins.map((admin) => admin.config('RESETSTAT')));
  const started = performance.now();
  for (const child of children) child.send({ type: 'go' });
  const all = await Promise.all(children.map(async (child) => (await child.expect('result')).result));
  const elapsed = performance.now() - started;
  const calls = await commandCalls(admins);
  const acquisitions = all.reduce((sum, r) => sum + r.acquisitions, 0);
  const waits = all.flatMap((r) => r.waits);
  const holds = all.flatMap((r) => r.holds).sort((a, b) => a[0] - b[0]);
  let overlaps = 0;
  for (let i = 1; i < holds.length; i++) if (holds[i]![0] < holds[i - 1]![1] - 0.05) overlaps++;
  // The most holds at once: starts and ends swept in time order (an end 0.05 ms after a start still counts as before it).
  const events = holds.flatMap(([start, end]): [number, number][] => [[start, 1], [end - 0.05, -1]]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let peak = 0;
  let held = 0;
  for (const [, step] of events) peak = Math.max(peak, (held += step));
  return {
    acquisitions,
    perSecond: acquisitions / (Math.min(elapsed, durationMs + 1_000) / 1_000),
    p50: percentile(waits, 50),
    p99: percentile(waits, 99),
    max: percentile(waits, 100),
    commandsPerAcquisition: calls / Math.max(1, acquisitions),
    overlaps,
    peak,
    errors: all.reduce((sum, r) => sum + r.errors, 0),
  };
}

interface Row {
  masters: number;
  lib: Lib;
  un: RunResult;
  /** One result per contended shape, in the order of SHAPES. */
  co: RunResult[];
}

/** The contended shapes: the main bench's scenario 3 (bench/lib/plan.ts), and the same with longer holds. */
const SHAPES: readonly (Shape & { label: string })[] = [
  { label: 'hold 1 ms, think 5 ms', processes: 4, loops: 2, holdMs: 1, thinkMs: 5 },
  { label: 'hold 10 ms, think 5 ms', processes: 4, loops: 2, holdMs: 10, thinkMs: 5 },
];
/** The semaphores' contended shape: bench/semaphore.ts's (3 permits, 12 loops). */
const SEM_SHAPE: Shape & { label: string } = { label: `${PERMITS} permits, hold 1 ms, think 3 ms`, processes: 4, loops: 3, holdMs: 1, thinkMs: 3 };

async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const onlyAt = process.argv.indexOf('--only');
  const only = onlyAt > 0 ? process.argv[onlyAt + 1]!.split(',') : undefined;
  const write = !quick && !only && !process.argv.includes('--no-write');
  const uncontendedMs = quick ? 1_000 : 3_000;
  const contendedMs = quick ? 1_500 : 4_000;
  const alone: Shape = { processes: 1, loops: 1, holdMs: 0, thinkMs: 0 };
  const loadAtStart = loadavg();
  const began = performance.now();
  const servers: RedisServer[] = await Promise.all(Array.from({ length: 5 }, () => startPrivateRedis()));
  const admins = servers.map((server) => server.connect());
  const rows: Row[] = [];
  const semRows: Row[] = [];
  try {
    for (const masters of [3, 5]) {
      const urls = servers.slice(0, masters).map((server) => server.url);
      const used = admins.slice(0, masters);
      for (const lib of [...LIBS, ...SEM_LIBS].filter((lib) => !only || only.includes(lib))) {
        const semaphore = (SEM_LIBS as readonly Lib[]).includes(lib);
        const shapes = semaphore ? [SEM_SHAPE] : SHAPES;
        const un = await run(lib, urls, used, uncontendedMs, alone);
        const co: RunResult[] = [];
        for (const shape of shapes) co.push(await run(lib, urls, used, contendedMs, shape));
        (semaphore ? semRows : rows).push({ masters, lib, un, co });
        process.stderr.write(
          `${masters} masters ${lib.padEnd(9)} uncontended ${un.perSecond.toFixed(0)}/s (${un.commandsPerAcquisition.toFixed(1)} cmds/acq); ` +
            co
              .map((c, i) => `[${shapes[i]!.label}] ${c.perSecond.toFixed(0)}/s p99 ${c.p99.toFixed(1)} ms, ${c.commandsPerAcquisition.toFixed(1)} cmds/acq, overlaps ${c.overlaps}, most held ${c.peak}, errors ${c.errors}`)
              .join('; ') +
            '\n',
        );
      }
    }
  } finally {
    for (const admin of admins) admin.disconnect();
    await Promise.all(servers.map((server) => server.stop()));
  }
  const seconds = (performance.now() - began) / 1_000;
  const loadAtEnd = loadavg();
  const fmt = (n: number, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '-');
  const mineOf = (row: Row) => rows.find((r) => r.masters === row.masters && r.lib === 'relock');
  const uncontended = [
    '| masters | library | ops/s | relock / it | cmds per acquire + release |',
    '| ---: | --- | ---: | ---: | ---: |',
    ...rows.map((row) => {
      const mine = mineOf(row);
      return `| ${row.masters} | ${PACKAGES[row.lib]} | ${fmt(row.un.perSecond)} | ${row.lib === 'relock' || !mine ? '-' : fmt(mine.un.perSecond / row.un.perSecond, 2)} | ${fmt(row.un.commandsPerAcquisition, 1)} |`;
    }),
  ].join('\n');
  const contendedTable = [
    '| masters | shape | library | acq/s | p50 wait ms | p99 wait ms | its p99 / relock p99 | cmds/acq | its cmds / relock cmds | overlaps |',
    '| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...SHAPES.flatMap((shape, s) =>
      rows.map((row) => {
        const mine = mineOf(row)?.co[s];
        const c = row.co[s]!;
        const self = row.lib === 'relock' || !mine;
        return `| ${row.masters} | ${shape.label} | ${PACKAGES[row.lib]} | ${fmt(c.perSecond)} | ${fmt(c.p50, 1)} | ${fmt(c.p99, 1)} | ${self ? '-' : fmt(c.p99 / mine.p99, 2)} | ${fmt(c.commandsPerAcquisition, 1)} | ${self ? '-' : fmt(c.commandsPerAcquisition / mine.commandsPerAcquisition, 2)} | ${c.overlaps} |`;
      }),
    ),
  ].join('\n');
  const semTable = [
    `| masters | library | uncontended ops/s | relock / it | contended acq/s | p50 wait ms | p99 wait ms | its p99 / relock p99 | cmds/acq | its cmds / relock cmds | most held at once (of ${PERMITS}) |`,
    '| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...semRows.map((row) => {
      const mine = semRows.find((r) => r.masters === row.masters && r.lib === 'sem');
      const self = row.lib === 'sem' || !mine;
      const c = row.co[0]!;
      const m = mine?.co[0];
      return `| ${row.masters} | ${PACKAGES[row.lib]} | ${fmt(row.un.perSecond)} | ${self ? '-' : fmt(mine!.un.perSecond / row.un.perSecond, 2)} | ${fmt(c.perSecond)} | ${fmt(c.p50, 1)} | ${fmt(c.p99, 1)} | ${self ? '-' : fmt(c.p99 / m!.p99, 2)} | ${fmt(c.commandsPerAcquisition, 1)} | ${self ? '-' : fmt(c.commandsPerAcquisition / m!.commandsPerAcquisition, 2)} | ${c.peak} |`;
    }),
  ].join('\n');
  const setup =
    `${cpus().length} cores (${cpus()[0]?.model ?? 'unknown CPU'}), Node ${process.version}, 5 private redis-servers on this machine; ` +
    `load average ${loadAtStart.map((n) => n.toFixed(2)).join(' ')} at the start, ${loadAtEnd.map((n) => n.toFixed(2)).join(' ')} at the end; ${seconds.toFixed(0)} s.`;
  process.stdout.write(`\nUncontended\n\n${uncontended}\n\nContended\n\n${contendedTable}\n\nSemaphore\n\n${semTable}\n\n${setup}\n`);
  if (write) {
    const doc = `# Redlock benchmark

\`cd bench && node --import tsx redlock.ts\` (bench/redlock.ts), ${new Date().toISOString().slice(0, 10)}. ${setup}

relock's Redlock client (\`new LockClient({ redis: [3 or 5 URLs] })\`, \`client.lock(name).acquire()\`,
default 30 s watchdog lease, pub/sub wake-ups) against the Redlock implementations users would pick:
${LIBS.filter((lib) => lib !== 'relock')
  .map((lib) => `\`${PACKAGES[lib]}\``)
  .join(', ')}, each with a 30 s lease and retries every ${RETRY_MS} ms (± ${RETRY_MS / 2} ms jitter where it has one;
redlock-universal has none) until acquired, each on its own ioredis connection per master.

- **Uncontended**: one process, acquire then release one lock name in a loop for ${uncontendedMs / 1_000} s, after ${WARM_MS} ms of the same loop on another name (every worker of every run warms up so). "relock / it"
  above 1 means relock did more operations per second.
- **Contended**: ${SHAPES[0]!.processes} child processes x ${SHAPES[0]!.loops} loops on one lock name, each loop: acquire (the wait
  is timed), hold, release, think, for ${contendedMs / 1_000} s; the first shape is the main bench's scenario 3, the second
  holds ten times longer. "cmds/acq" is every command the masters executed (INFO commandstats summed
  over the masters, the commands run inside Lua scripts included) divided by the acquisitions; the
  ratio columns are the peer's figure over relock's (above 1: relock is lower, i.e. better). "overlaps"
  counts holds that began before the previous one ended on one monotonic clock (a sanity check: 0).

## Uncontended

${uncontended}

## Contended

${contendedTable}

## Semaphore over several masters

${semTable}

relock's \`client.semaphore(name, { permits: ${PERMITS} })\` on the Redlock client (permits as slots, each
slot held by a majority: docs/semaphore.md) against redis-semaphore's \`RedlockSemaphore\` (limit ${PERMITS},
retry every ${RETRY_MS} ms, 30 s lease, no refresh), which counts holders on each master and takes a
majority of counts: with ${PERMITS} permits that admits more than ${PERMITS} holders once masters disagree
(docs/semaphore.md shows how), which "most held at once" would show. Uncontended: one loop in one process;
contended: ${SEM_SHAPE.processes} processes x ${SEM_SHAPE.loops} loops, ${SEM_SHAPE.label}, for the same time as the locks.

## Reading it

- relock's fencing token costs no round trip in the common case: each master's acquire script proposes
  max(its fence + 1, the client's clock in µs), and when a majority proposed the same value the token is
  confirmed by that very acquire; the write-back (docs/redlock.md) runs only when the proposals differ.
- relock's scripts do more per master than a \`SET NX PX\` (the reentrant hash, the fence, the publish on
  release, on a majority of masters only): 29 commands over 3 masters per acquire + release against
  redlock's and @sesamecare-oss/redlock's 18 and redlock-universal's 12. Under contention a relock waiter sleeps until a release has been
  published by a majority of masters, then retries at one gate master (2 commands when it loses
  there); the peers poll every 10 ms (1 or 2 commands per master per failed poll), so their cost grows
  with the length of the wait: with 1 ms holds the polls are few and relock's heavier success path
  dominates; with 10 ms holds redlock 4.2.0's polling costs it more than relock.
- \`fairLock()\` on the Redlock client serves waiters in the order they reached the gate master's queue,
  then takes a quorum lock of its own: its p99 wait is the lowest of every row (a quarter to a half of
  \`lock()\`'s, below every peer's in both shapes), at one more script on the gate each way (41 against 29
  commands per uncontended acquire + release on 3 masters) and less than half of \`lock()\`'s uncontended
  rate. \`lock()\` barges: with 10 ms holds its p99 is behind redlock-universal's and redlock's.
- The semaphores: relock's keeps at most 3 permits held in every run ("most held at once"), at about six
  times redis-semaphore's commands per acquisition (each master's script reads every slot's holder,
  prunes ended leases, proposes a token); redis-semaphore's \`RedlockSemaphore\` admitted 4 holders of
  its 3 permits in these fault-free runs, since concurrent acquires reach the masters in different
  orders and each master counts only its own holders.
- @sesamecare-oss/redlock stalls under contention: it gives back a partial acquisition only after its
  last retry (never, with \`retryCount: -1\`), so contenders that each took a minority keep it and none
  reaches a majority until the 30 s lease expires; its loops still waiting when the run ended are
  counted in "errors" (printed by the script) and left out of its waits.
- All masters share this machine's 2 cores with the benchmark's processes and with other work: absolute
  figures are low and noisy; compare within a run (\`--no-write\` prints a run without writing this page).
`;
    writeFileSync(new URL('../docs/benchmarks/redlock.md', import.meta.url), doc);
    process.stderr.write('wrote docs/benchmarks/redlock.md\n');
  }
}

if (process.argv[2] === '--worker') {
  const [, , , lib, urls, name, durationMs, loops, holdMs, thinkMs] = process.argv;
  await worker(lib as Lib, JSON.parse(urls!) as string[], name!, Number(durationMs), Number(loops), Number(holdMs), Number(thinkMs));
} else {
  await main();
}
