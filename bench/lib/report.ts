// docs/benchmarks.md and docs/benchmarks/*.svg from one run's records: medians of the repetitions,
// each figure also as a ratio to the best peer, the targets checked, the machine and versions.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, release, totalmem, type } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BASELINE_COMMIT } from './baseline.ts';
import { bars, growth, type Datum } from './charts.ts';
import { PROXY_HOP } from './link.ts';
import { linkSection } from './link-report.ts';
import { best, C, chartData, COLUMNS, failures, indexRows, nameOf, table, type Column } from './columns.ts';
import { HERD_SETTLE_MS, LONG_RUN_TIMEOUT_MS, MANY_SETTLE_MS, SLICES, TITLES, type Sizes } from './plan.ts';
import type { ScenarioId } from './protocol.ts';
import type { ReportInput } from './report-input.ts';
import { fairTargets, targets } from './targets.ts';
import { beforeAfter, diagnosticsCost, herdGrowth, legsTable, noise, topCommands, why } from './why.ts';

export type { Record_, ReportInput } from './report-input.ts';

const bench = fileURLToPath(new URL('..', import.meta.url));

function version(pkg: string): string {
  try {
    return (JSON.parse(readFileSync(join(bench, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '?';
  }
}

function rootVersion(pkg: string): string {
  try {
    return (JSON.parse(readFileSync(join(bench, '..', 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '?';
  }
}

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: bench, encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}

/** relock's version and commit, for the record of a run. */
export function relockVersion(): string {
  const pkg = JSON.parse(readFileSync(join(bench, '..', 'package.json'), 'utf8')) as { version: string };
  const commit = git(['rev-parse', '--short', 'HEAD']);
  const dirty = git(['status', '--porcelain', '--', '../src', '../lua']) !== '';
  return `${pkg.version} (dist/ built from ${commit || 'an unknown commit'}${dirty ? ' with uncommitted changes to src/ or lua/' : ''})`;
}

/** Where the hand-written summary of benchmarks.md begins and ends: a run keeps it as it is. */
const SUMMARY_START = '<!-- summary: written by hand, kept by bench/run.ts; test/integration/testing/readme-figures.test.ts checks its figures -->';
const SUMMARY_END = '<!-- /summary -->';

/** The hand-written summary of the page a run replaces (empty when it has none), with a blank line after. */
function summary(file: string): string {
  let page = '';
  try {
    page = readFileSync(file, 'utf8');
  } catch {
    return '';
  }
  const start = page.indexOf(SUMMARY_START);
  const end = page.indexOf(SUMMARY_END);
  return start >= 0 && end > start ? `${page.slice(start, end + SUMMARY_END.length)}\n\n` : '';
}

export async function writeReport(input: ReportInput): Promise<string[]> {
  const chartsDir = join(input.target, 'benchmarks');
  mkdirSync(chartsDir, { recursive: true });
  const written: string[] = [];
  const order = input.adapters.map((a) => a.id);
  const { rowsOf, at } = indexRows(input);

  const sections: string[] = [];
  const chart = async (name: string, svg: Promise<string>) => {
    const file = join(chartsDir, `${name}.svg`);
    writeFileSync(file, await svg);
    written.push(file);
    return `![${name}](benchmarks/${name}.svg)`;
  };
  for (const scenario of input.scenarios) {
    const parts: string[] = [`## ${TITLES[scenario]}`];
    const columns = COLUMNS[scenario];
    if (scenario === 'herd') {
      const data: Datum[] = [];
      const tables: string[] = [];
      for (const size of input.sizes.herd) {
        const all = rowsOf('herd', size);
        if (all.length === 0) continue;
        data.push(...chartData(all, [{ column: C.cpu, name: 'cpu' }, { column: C.commands, name: 'commands' }, { column: C.ops, name: 'ops' }], size));
        tables.push(`### ${size} waiters\n\n${table(all, columns, (c) => best(all, c))}${failures(all)}${topCommands(input, 'herd', size)}`);
      }
      parts.push(DESCRIPTIONS.herd(input.sizes));
      parts.push(await chart('herd', growth('The herd: load on Redis and hand-off rate by waiters', data, [
        { name: 'cpu', title: 'Redis CPU µs per acquisition' },
        { name: 'commands', title: 'Redis commands per acquisition' },
        { name: 'ops', title: 'acquisitions per second' },
      ], order)));
      parts.push(`How the load per acquisition grows with the waiters (medians):\n\n${herdGrowth(input, at)}`);
      parts.push(...tables);
    } else {
      const size = scenario === 'many' ? input.sizes.names : undefined;
      const all = rowsOf(scenario, size);
      if (all.length === 0) continue;
      parts.push(DESCRIPTIONS[scenario](input.sizes));
      if (scenario === 'reentrant') {
        // No peer re-enters: the reference is relock's own plain acquire+release of scenario 1.
        const plain = at('uncontended', 'relock');
        const data = [...chartData(all, [{ column: C.ops, name: 'ops' }, { column: C.p99('round'), name: 'p99' }])].map((d) => ({ ...d, library: 'relock, nested' }));
        if (plain) data.push({ library: 'relock, plain (scenario 1)', kind: 'peer', figure: 'ops', value: plain.get(C.ops) ?? Number.NaN }, { library: 'relock, plain (scenario 1)', kind: 'peer', figure: 'p99', value: plain.get(C.p99('round')) ?? Number.NaN });
        parts.push(await chart('reentrant', bars('Reentrant: a nested acquire+release inside a held lock', data, [{ name: 'ops', title: 'rounds per second' }, { name: 'p99', title: 'p99 ms per round' }], ['relock, nested', 'relock, plain (scenario 1)'], { legend: false })));
        parts.push(`Ratios are to relock's own plain acquire+release (scenario 1), since no peer can re-enter.\n\n${table(all, columns, (c) => (plain ? plain.get(c) : undefined))}`);
      } else {
        const figures: Record<string, { column: Column; name: string; title: string }[]> = {
          uncontended: [
            { column: C.ops, name: 'ops', title: 'acquire+release per second' },
            { column: C.p99('round'), name: 'p99', title: 'p99 ms per round' },
            { column: C.cpu, name: 'cpu', title: 'Redis CPU µs per acquisition' },
          ],
          contended: [
            { column: C.utilisation, name: 'utilisation', title: 'utilisation (held / wall)' },
            { column: C.p99('wait'), name: 'p99', title: 'p99 wait ms' },
            { column: C.cpu, name: 'cpu', title: 'Redis CPU µs per acquisition' },
          ],
          many: [
            { column: C.ops, name: 'ops', title: 'acquisitions per second' },
            { column: C.memory, name: 'memory', title: 'heap bytes per waiting acquirer' },
            { column: C.cpu, name: 'cpu', title: 'Redis CPU µs per acquisition' },
          ],
        };
        const chosen = figures[scenario]!;
        parts.push(await chart(scenario, bars(TITLES[scenario].replace(/^\d\. /, ''), chartData(all, chosen), chosen, order)));
        parts.push(`${table(all, columns, (c) => best(all, c))}${failures(all)}${topCommands(input, scenario, size)}`);
        if (scenario === 'uncontended') parts.push(...[beforeAfter(input, at), diagnosticsCost(at), noise(input, all)].filter((text) => text !== ''));
        if (scenario === 'contended') parts.push(legsTable(input));
      }
    }
    sections.push(parts.join('\n\n'));
  }

  const linkPart = linkSection(input, at);
  if (linkPart !== '') sections.push(linkPart);

  const minutes = `${Math.floor(input.seconds / 60)} min ${Math.round(input.seconds % 60)} s`;
  const cpu = cpus();
  const peers = input.adapters.map((a) => {
    const v =
      a.kind === 'relock'
        ? input.relock
        : a.kind === 'baseline'
          ? `0.1.0 (built from ${input.baseline?.slice(0, 7) ?? BASELINE_COMMIT} by bench/lib/baseline.ts)`
          : a.pkg
            ? version(a.pkg)
            : 'written in bench/adapters';
    const name = a.kind === 'peer' ? `[${a.id}](https://www.npmjs.com/package/${a.pkg})` : a.kind === 'floor' ? `*${a.id}* (floor)` : nameOf(a);
    return `| ${name} | ${v} | ${a.waiting} | ${a.settings} |`;
  });
  const doc = `# Benchmarks

<!-- Generated by bench/run.ts (\`${input.command}\`): do not edit by hand, run it again. -->

relock against the Redis lock libraries people would pick instead, on the same private Redis in the
same run${input.linkMs === undefined ? '' : `, every client reaching it over a delaying TCP proxy set to ${input.linkMs} ms round trip (bench/lib/link-proxy.ts, the same for every library; ${PROXY_HOP})`}. Generated by \`${input.command}\` on ${input.date}; the run took ${minutes}.
Each figure is the median of ${input.sizes.runs} runs; in brackets, its ratio to the best **peer**
for that figure (the highest for ops/s and utilisation, the lowest for everything else), since the
machine is shared and absolute times drift from run to run. The floors (*in italics*) are not peers:
they are what a minimal hand-written lock costs.

${summary(join(input.target, 'benchmarks.md'))}## Targets

${targets(input, at)}

${fairTargets(input, at)}

${why(input, at)}

## The machine

- ${cpu[0]?.model ?? 'unknown CPU'}, ${cpu.length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, ${type()} ${release()}; shared with other
  work (load average ${input.loadAtStart.map((l) => l.toFixed(2)).join(' / ')} at the start of the run, ${input.loadAtEnd.map((l) => l.toFixed(2)).join(' / ')} at the end).
- Node ${process.version}; Redis ${input.redis.version} (${process.env.REDIS_URL ? 'at REDIS_URL' : 'a private redis-server on 127.0.0.1, no persistence'}, io-threads ${input.redis.ioThreads}),
  on the same cores as the clients.
- relock runs from its published bundle, \`dist/index.mjs\`, which \`npm run bench\` builds first from the
  tree it sits in (the root script is \`npm run build && cd bench && npm ci && node --import tsx run.ts\`)
  and copies to \`bench/results/relock-dist/\` for the run, so a rebuild meanwhile cannot disturb it;
  the peers live in \`bench/package.json\` only. The harness and the floors are TypeScript run by tsx;
  *relock-scripts* imports relock's \`src/lock/commands.ts\`, \`src/lock/keys.ts\` and \`src/runtime/script.ts\` directly.
- *relock-0.1.0*, relock before this change, is built by the bench itself (\`bench/lib/baseline.ts\`):
  \`git archive ${input.baseline?.slice(0, 7) ?? BASELINE_COMMIT}\` of \`src\`, \`lua\`, \`scripts\` and the build files into
  \`bench/results/baseline-src/\`, its Lua generated and bundled there with the root's \`node_modules\`, and
  its \`dist/index.mjs\` copied to \`bench/results/baseline/\` (once per commit); it then runs through the
  same adapter as relock, on the same copy of ioredis. Without git or that commit it is left out.
  \`RELOCK_BASELINE_COMMIT=<commit>\` builds another commit instead, to measure a later change.

## Libraries, versions and settings

Every library holds its locks for 30 s and waits until it has the lock; the polling ones poll every
10 ms (their fastest sensible setting: the same as the floor; lower only multiplies their load on
Redis).

| library | version | waits by | settings |
| --- | --- | --- | --- |
${peers.join('\n')}

redlock-universal declares \`engines: { node: ">=22" }\` in every published version; none allows
Node 20. It installs (npm only warns) and ${input.records.some((r) => r.adapter === 'redlock-universal' && !r.result.ok) ? 'ran on Node 20, though not every run finished (see the tables)' : 'finished every run of this one on Node 20 with no overlap'}, so it is measured
rather than left out: read its figures knowing it is outside its declared engines.
Redis clients: ioredis ${version('ioredis')} (bench's own copy) for relock, the peers and the floors (relock's root declares ${rootVersion('ioredis')}); node-redis ${version('redis')} for simple-redis-mutex.

### What the libraries do (read in their source)

- **node-redisson** keeps Redisson's design: a hash per lock with an owner field and a count, a
  watchdog, a release that publishes. But a waiter subscribes to the lock's channel only after its
  attempt failed, and unsubscribes (for its whole process: the subscription is not counted per
  waiter) as soon as a message arrives. A release that lands before the waiter's SUBSCRIBE is
  missed, and the waiter sleeps for the holder's remaining TTL, up to the 30 s lease. With a 1 ms
  critical section (scenario 3) the SUBSCRIBE usually wins the race; with none (scenarios 4 and 5)
  every hand-off inside a process can cost up to 30 s. Its unlock makes two round trips (the
  script, then a DEL of an "unlock latch" key).
- **simple-redis-mutex** publishes every release on one global channel; every waiter of that lock
  in each process then sends SET NX, so its load per acquisition grows with the waiters per
  process. Each acquisition also INCRs a global fencing counter.
- **@sesamecare-oss/redlock** and **redlock** 4 poll with a Lua script (EXISTS then SET); the
  former starts every script with a \`SELECT\`, counted among its commands, and emits \`'error'\`
  for every attempt that finds the lock taken.
- **redis-semaphore** and **redlock-universal** poll with a plain \`SET NX PX\` and release with a
  Lua compare-and-delete: the same commands as *floor-poll*.

## How it is measured

- One interface for all (\`bench/adapters/\`): \`acquire(name)\` resolves once the lock is held,
  \`release()\` gives it back. Every client runs in a worker process of its own (\`bench/lib/worker.ts\`),
  forked fresh for each run; it connects and warms up (one acquire+release on a name of its own;
  200 in scenarios 1 and 2) before the measured part starts. The harness itself: \`bench/run.ts\`
  (the plan, the progress lines), \`bench/lib/runner.ts\` (one run: workers, Redis counters, figures),
  \`bench/lib/report.ts\` with \`columns.ts\`, \`targets.ts\`, \`why.ts\` and \`charts.ts\` beside it (this page;
  the targets themselves are data: \`TARGETS\` in \`bench/lib/plan.ts\`).
- **Overlap check**: every critical section is stamped on the system-wide monotonic clock
  (\`process.hrtime\`, the same in every process) just after \`acquire\` resolves and just before
  \`release\` is called; the sections of one lock, from all processes, must never overlap. Each
  stamp lies strictly inside the time Redis held the lock, so any overlap is a real double grant.
- **Latency**: scenarios 1 and 2, one acquire+release round; 3, the wait from calling \`acquire\`
  to holding the lock; 4 and 5, the hand-off: from one holder leaving its critical section to the next
  one entering it. **Wait p99** is from calling \`acquire\` to holding.
- **Utilisation** (3): time inside critical sections / wall time, over the window from 250 ms after
  the start to the end (${input.sizes.contendedMs / 1000} s). The lock is in fact held on Redis a little longer than the
  critical section: from the acquire's script to the release's, that is until the release reaches
  Redis. **Utilisation to release** counts each hold until its \`release()\` resolved (overlapping
  spans merged). The first leaves out about a round trip per hold (the acquire's reply, the release's
  request), the second adds the release's reply and leaves out the acquire's. **Fairness**:
  acquisitions of the busiest loop / of the idlest loop.
- **Overtaken by a later caller** (3): each acquire is stamped when it is called and when it
  resolves, on the same system-wide clock in every process; an acquisition counts as overtaken when
  some other acquire of the lock, called at least 1 ms after it (in any process), got the lock
  before it did. A FIFO lock scores 0; a lock that lets every waiter race scores what luck gives.
- **Hand-off p50/p99** (3): from one holder leaving its critical section (just before it calls
  \`release()\`) to the next holder entering, counted only where that next holder had already called
  \`acquire()\` before the previous one left (so idle time between holders is not hand-off).
  In 4 and 5 the hand-off latency counts every gap between holders.
- **Redis commands per acquisition**: \`CONFIG RESETSTAT\` once every client is connected and warm,
  then the sum of \`calls\` over \`INFO commandstats\` at the end, less the harness's own INFO/CONFIG.
  Commands that scripts call are counted by Redis as commands of their own (\`cmdstat_hset\`...), so
  they are included; **script calls/acq** counts the EVALSHA/EVAL calls alone (round trips, for
  libraries that send nothing else). **Redis CPU** is the \`used_cpu_user + used_cpu_sys\` delta
  of \`INFO cpu\` over the same window; it includes Redis's network work, so it is what a lock costs
  the server, not only its scripts.
- **Connections per client**: \`total_connections_received\` from before the workers start to the
  end, divided by the number of clients (one per process).
- **Heap per waiting acquirer** (5): \`heapUsed\` after two forced GCs with the ${input.sizes.names} holders in place,
  and again with the ${input.sizes.names * 2} waiters queued for ${MANY_SETTLE_MS} ms, divided by the waiters.
- **Client CPU per acquisition**: \`process.cpuUsage()\` of the client processes over the measured
  part (all their threads: the library, ioredis, V8's compiler and GC), divided by the acquisitions.

${sections.join('\n\n')}

## Sizing

${SIZING(input.sizes, minutes)}

## Reproduce

\`\`\`sh
npm ci && npm run bench                       # the whole run: writes this file and docs/benchmarks/*.svg
npm run bench -- --quick                      # 1 run, smaller sizes, report under bench/results/docs
npm run bench -- --only relock,floor-poll --scenarios herd --runs 1
npm run bench -- --quick --link 0.5           # every client over a 0.5 ms link (bench/lib/link-proxy.ts)
npm run bench -- --quick --also-link          # then the headline scenarios again over it (a full run does)
REDIS_URL=redis://127.0.0.1:6380 npm run bench   # on a Redis of your own: it runs CONFIG RESETSTAT and
                                              # deletes keys matching *relock-bench:* (never FLUSHALL)
BENCH_DEBUG=1 npm run bench -- --quick        # where each run's time goes (fork, run, close)
cd bench && node --import tsx run.ts --report-only   # this page again from bench/results/results.json
node --import tsx bench/diagnostics-cost.ts   # the diagnostics guards and acquire+release with and without subscribers
\`\`\`

Raw figures of the last run, every repetition: \`bench/results/results.json\`; what the workers
printed: \`bench/results/workers.log\`.
`;
  const file = join(input.target, 'benchmarks.md');
  writeFileSync(file, doc);
  written.unshift(file);
  return written;
}

const DESCRIPTIONS: Record<ScenarioId, (sizes: Sizes) => string> = {
  uncontended: (s) => `One client, one caller: acquire then release one lock, ${s.rounds.toLocaleString('en-US')} times in a row (after 200 to warm up). A round is one acquire+release.`,
  reentrant: (s) => `relock only: inside a held lock's async context (\`lease.run\`), ${s.rounds.toLocaleString('en-US')} nested acquire+release rounds of the same lock. The others cannot re-enter: a nested acquire would wait for itself.`,
  contended: (s) => `4 processes, each with 2 loops, on one lock for ${s.contendedMs / 1000} s: acquire, hold 1 ms (a timer), release, think 5 ms (a timer). Eight loops each wanting the lock 1 ms in every 6 ms keep it always wanted: the time it is not held is hand-off.`,
  herd: (s) => `One lock, held by one process while ${s.herd.join(', ')} waiters (a quarter in each of 4 processes) start acquiring it; ${HERD_SETTLE_MS} ms later it is released, and every waiter takes it once and releases it at once, in turn. The load is counted from the start of the waiters (so a waiter's first attempt and its subscribing count) to the last release; the "hand-off phase" columns count from the holder's release only.`,
  many: (s) => `One process, one client: ${s.names.toLocaleString('en-US')} lock names, each held, each with 2 waiters queued behind it (${(s.names * 2).toLocaleString('en-US')} waiting acquirers); then every holder releases and each waiter takes its lock once and releases it. Ops/s is waiters served per second from the release.`,
};

function SIZING(sizes: Sizes, minutes: string): string {
  return `The whole run took ${minutes} on the machine above (aim: under 20 minutes on 2 shared cores).
Each scenario runs ${sizes.runs} times per library, and the report gives the median of each figure. Within a
repetition the libraries take turns, so that drift on the shared machine spreads over all of them;
scenario 1, the one whose targets are ratios of throughput, goes further: all the libraries' workers
are started together and run their ${sizes.rounds.toLocaleString('en-US')} rounds in ${SLICES} slices of ${Math.floor(sizes.rounds / SLICES)}, turn by turn, so a burst of load
from elsewhere lands on every library alike (*floor-poll*, measured twice in that interleave, shows
how much noise is left). Per run: ${sizes.rounds.toLocaleString('en-US')} rounds in scenarios 1 and 2 (2-4 s for the slowest
library); ${sizes.contendedMs / 1000} s of contention in 3 (about 1,200-1,800 acquisitions), plus one traced run per pub/sub
library on ioredis; ${sizes.herd.join(', ')} waiters in 4 (800 is where the polling costs show); ${sizes.names.toLocaleString('en-US')} names in 5.
Most of a run's time is starting its workers (about 1 s for 4 processes under tsx). A herd or
many-locks run that does not finish within ${LONG_RUN_TIMEOUT_MS / 1000} s is stopped (its workers killed) and reported with
how far it got; that library is then not run again in that scenario, nor with more waiters.`;
}
