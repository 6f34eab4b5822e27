// `npm run bench`: every library, every scenario, on one private Redis, in one run; then the report.
//
//   node --import tsx run.ts [--quick] [--runs N] [--only relock,floor-poll] [--scenarios herd,many]
//   node --import tsx run.ts --report-only   # the report again from bench/results/results.json
//   node --import tsx run.ts --link 0.5      # every client over a link of 0.5 ms round trip (lib/link.ts)
//   node --import tsx run.ts --also-link     # then the headline scenarios again over a 0.5 ms link (a full run does)
//
// A full run (no flags) writes docs/benchmarks.md and docs/benchmarks/*.svg, then runs the family's
// benches (semaphore.ts, rw-lock.ts, redlock.ts: docs/benchmarks/<name>.md); a partial one writes
// its report under bench/results/ so it never replaces the published figures.
// relock-0.1.0 (relock before this change) is built from git on the way (lib/baseline.ts); without
// git or its commit it is left out with a note. RELOCK_BASELINE_COMMIT=<commit> builds another one
// (lib/baseline.ts).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { copyBuild } from './lib/bundle.ts';
import { startLink } from './lib/link.ts';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { ADAPTERS } from './adapters/index.ts';
import type { AdapterSpec } from './adapters/types.ts';
import { baselineBundle } from './lib/baseline.ts';
import { now } from './lib/clock.ts';
import { cases, FULL, QUICK, SCENARIOS, SLICES, traceCase, type Sizes } from './lib/plan.ts';
import type { ScenarioId } from './lib/protocol.ts';
import { startRedis } from '../test/helpers/redis.ts';
import { clean, serverInfo } from './lib/redis-stats.ts';
import { relockVersion, writeReport, type Record_, type ReportInput } from './lib/report.ts';
import { openLog, runCase, runSliced, type CaseResult, type CaseSpec } from './lib/runner.ts';
import { formatCase } from './lib/progress.ts';

const here = fileURLToPath(new URL('.', import.meta.url));
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    'report-only': { type: 'boolean', default: false },
    runs: { type: 'string' },
    only: { type: 'string' },
    scenarios: { type: 'string' },
    link: { type: 'string' },
    'also-link': { type: 'boolean', default: false },
  },
});
/** The round trip of the link to Redis, in ms (a delaying proxy: lib/link-proxy.ts); none on loopback. */
const linkMs = values.link === undefined ? undefined : Number(values.link);
if (linkMs !== undefined && !(linkMs > 0 && linkMs <= 100)) throw new RangeError(`--link ${values.link}: expected a round trip in milliseconds, above 0 and at most 100`);
const sizes: Sizes = { ...(values.quick ? QUICK : FULL), ...(values.runs ? { runs: Number(values.runs) } : {}) };
const only = values.only?.split(',');
let adapters = ADAPTERS.filter((adapter) => !only || only.includes(adapter.id));
const scenarios = SCENARIOS.filter((scenario) => !values.scenarios || values.scenarios.split(',').includes(scenario));
const full = !values.quick && !values.runs && !only && !values.scenarios && linkMs === undefined;

const resultsDir = join(here, 'results');
mkdirSync(resultsDir, { recursive: true });

/** Everything a report is made from: bench/results/results.json (the libraries by id; the target folder is chosen when the report is written). */
interface Saved extends Omit<ReportInput, 'adapters' | 'target'> {
  adapters: string[];
  full: boolean;
}

function report(saved: Saved): Promise<string[]> {
  return writeReport({
    ...saved,
    adapters: ADAPTERS.filter((adapter) => saved.adapters.includes(adapter.id)),
    target: saved.full ? join(here, '..', 'docs') : join(resultsDir, 'docs'),
  });
}

if (values['report-only']) {
  const saved = JSON.parse(readFileSync(join(resultsDir, 'results.json'), 'utf8')) as Saved;
  process.stderr.write(`report: ${(await report(saved)).join(', ')}\n`);
  process.exit(0);
}

// relock's bundle, copied once: \`npm run build\` empties dist/ first, and a build elsewhere while
// this runs must not break the workers. The copy resolves its dependencies up the tree, as dist/ does.
process.env.RELOCK_BUNDLE = copyBuild(join(here, '..', 'dist'), join(resultsDir, 'relock-dist'));

// relock before this change, built from git when it is among the libraries (lib/baseline.ts).
let baselineCommit: string | undefined;
if (adapters.some((adapter) => adapter.kind === 'baseline')) {
  const baseline = baselineBundle(join(here, '..'), resultsDir);
  if (baseline.ok) {
    process.env.RELOCK_BASELINE_BUNDLE = baseline.bundle;
    baselineCommit = baseline.commit;
    process.stderr.write(`baseline: relock at ${baseline.commit.slice(0, 7)} ${baseline.built ? 'built' : 'already built'} in bench/results/baseline/\n`);
  } else {
    adapters = adapters.filter((adapter) => adapter.kind !== 'baseline');
    process.stderr.write(`baseline: left out (${baseline.reason})\n`);
  }
}
const log = openLog(join(resultsDir, 'workers.log'));

/** Measured twice in scenario 1, as a gauge of the noise. */
const NOISE_PROBE = 'floor-poll';

interface Planned {
  scenario: ScenarioId;
  run: number;
  /** One library's case, or (scenario 1) every library's, run in slices by runSliced. */
  specs: ReturnType<typeof cases>;
}
/** Every case of `scenarios` for `libraries`, in the order they run. */
function planOf(scenarios: readonly ScenarioId[], libraries: readonly AdapterSpec[], traced: boolean): Planned[] {
  const plan: Planned[] = [];
  for (const scenario of scenarios) {
    for (let run = 1; run <= sizes.runs; run++) {
      if (scenario === 'uncontended') {
        const all = libraries.filter((adapter) => !adapter.scenarios || adapter.scenarios.includes(scenario));
        const specs = all.flatMap((adapter) => cases(scenario, adapter.id, sizes));
        // The floor a second time, as if another library: how far apart the two land is the noise.
        const floor = specs.find((spec) => spec.adapter === NOISE_PROBE);
        if (floor) specs.push({ ...floor, label: `${NOISE_PROBE}#2` });
        plan.push({ scenario, run, specs });
        continue;
      }
      // Libraries take turns within each repetition, so drift on the shared machine spreads over all.
      for (const adapter of libraries) {
        if (scenario === 'reentrant' && adapter.kind !== 'relock') continue;
        if (adapter.scenarios && !adapter.scenarios.includes(scenario)) continue;
        for (const spec of cases(scenario, adapter.id, sizes)) plan.push({ scenario, run, specs: [spec] });
      }
    }
    if (scenario === 'contended' && traced) {
      // Run 0: traced, for the hand-off timeline only.
      for (const adapter of libraries) {
        if (adapter.scenarios && !adapter.scenarios.includes(scenario)) continue;
        if (adapter.kind === 'baseline') continue;
        if (adapter.waiting === 'pub/sub' && adapter.client === 'ioredis') plan.push({ scenario, run: 0, specs: [traceCase(adapter.id, sizes)] });
      }
    }
  }
  return plan;
}
const plan = planOf(scenarios, adapters, true);
/**
 * A full run measures the headline scenarios a second time over a link of LINK_MS round trip
 * (lib/link-proxy.ts), for the headline libraries (issue 34 point 4): what users on a network see.
 */
const LINK_MS = 0.5;
const LINKED = ['relock', 'relock-fair', 'redlock', 'redis-semaphore', 'node-redisson', 'floor-poll', 'floor-pubsub'];
const linkedPlan = (full || values['also-link']) && linkMs === undefined ? planOf((['uncontended', 'contended', 'herd'] as const).filter((scenario) => scenarios.includes(scenario)), adapters.filter((adapter) => LINKED.includes(adapter.id)), false) : [];
const total = [...plan, ...linkedPlan].reduce((sum, planned) => sum + planned.specs.length, 0);

const startedAt = now();
const loadAtStart = loadavg();
const relock = relockVersion();
// No persistence (the helper's default), so no fork or fsync skews Redis CPU; the herd of 800 needs clients.
const server = await startRedis({ args: ['--maxclients', '10000'] });
const stats = new Redis(server.url);
// The workers' way to Redis: direct, or over the link; Redis's own figures are read directly (stats).
const link = linkMs === undefined ? undefined : await startLink(server.url, linkMs);
const records: Record_[] = [];
const elapsed = () => {
  const seconds = Math.round((now() - startedAt) / 1000);
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
};
process.stderr.write(`relock bench: ${total} runs of ${adapters.length} libraries on ${server.url}${link ? ` over a ${link.rttMs} ms link (${link.url})` : ''}${full ? '' : ' (partial run)'}\n`);
try {
  const redis = await serverInfo(stats);
  let done = 0;
  const line = (scenario: ScenarioId, run: number, spec: CaseSpec) => {
    const size = spec.size === undefined ? '' : ` ${spec.size}`;
    const which = run === 0 ? 'traced run' : `run ${run}/${sizes.runs}`;
    return `[${String(++done).padStart(3)}/${total} ${elapsed().padStart(5)}] ${scenario}${size} ${which} ${spec.label ?? spec.adapter} ... `;
  };
  /** Runs `planned` with the workers reaching Redis at `target`, into `into`. */
  const execute = async (planned: Planned[], target: string, into: Record_[]) => {
    // A library that ran out of time once in a scenario is not run again in it (nor with more waiters):
    // the run stays bounded, and the report says what it got through.
    const outOfTime = new Map<string, number>();
    // A library that refused at setup as "not available" (relock-fair on a build without fairLock) is
    // recorded so in its other cases without forking workers for it again.
    const unavailable = new Map<string, string>();
    for (const { scenario, run, specs } of planned) {
      if (specs.length > 1) {
        process.stderr.write(`[    ${elapsed().padStart(5)}] ${scenario} run ${run}/${sizes.runs}: ${specs.length} libraries in ${SLICES} interleaved slices, slice`);
        const results = await runSliced(stats, target, specs, SLICES, log, server.private, (slice) => process.stderr.write(` ${slice}`));
        process.stderr.write('\n');
        specs.forEach((spec, i) => {
          let result = results[i]!;
          const notAvailable = result.ok ? null : /not available: [^\n]*/.exec(result.error);
          if (notAvailable) result = { ok: false, error: notAvailable[0], seconds: 0 };
          process.stderr.write(`${line(scenario, run, spec)}${formatCase(result)}\n`);
          into.push({ scenario, size: spec.size, adapter: spec.label ?? spec.adapter, run, result });
        });
        continue;
      }
      const spec = specs[0]!;
      process.stderr.write(line(scenario, run, spec));
      const key = `${scenario}:${spec.adapter}`;
      const failedAt = outOfTime.get(key);
      let result: CaseResult;
      const refused = unavailable.get(spec.adapter);
      if (refused !== undefined) {
        result = { ok: false, error: refused, seconds: 0 };
      } else if (failedAt !== undefined && (spec.size ?? 0) >= failedAt) {
        result = { ok: false, error: `not run: an earlier run of this scenario${spec.scenario === 'herd' ? ` with ${failedAt} waiters` : ''} did not finish`, seconds: 0 };
      } else {
        result = await runCase(stats, target, spec, log, server.private);
        if (!result.ok && result.error.startsWith('did not finish') && run > 0) outOfTime.set(key, spec.size ?? 0);
        const notAvailable = result.ok ? null : /not available: [^\n]*/.exec(result.error);
        if (notAvailable) {
          result = { ok: false, error: notAvailable[0], seconds: 0 };
          unavailable.set(spec.adapter, notAvailable[0]);
        }
      }
      process.stderr.write(`${formatCase(result)}\n`);
      into.push({ scenario, size: spec.size, adapter: spec.adapter, run, result });
    }
  };
  await execute(plan, link?.url ?? server.url, records);
  // A full run: the headline scenarios again over the link (issue 34 point 4).
  let linked: { ms: number; records: Record_[] } | undefined;
  if (linkedPlan.length > 0) {
    const over = await startLink(server.url, LINK_MS);
    process.stderr.write(`over a ${LINK_MS} ms link (${over.url}):\n`);
    try {
      linked = { ms: LINK_MS, records: [] };
      await execute(linkedPlan, over.url, linked.records);
    } finally {
      over.close();
    }
  }
  const seconds = (now() - startedAt) / 1000;
  const saved: Saved = {
    sizes,
    redis,
    seconds,
    records,
    adapters: adapters.map((adapter) => adapter.id),
    scenarios: [...scenarios],
    full,
    command: full ? 'npm run bench' : `npm run bench -- ${process.argv.slice(2).join(' ')}`,
    date: new Date().toISOString().slice(0, 10),
    relock,
    loadAtStart,
    loadAtEnd: loadavg(),
    ...(baselineCommit ? { baseline: baselineCommit } : {}),
    ...(linkMs === undefined ? {} : { linkMs }),
    ...(linked ? { linked } : {}),
  };
  writeFileSync(join(resultsDir, 'results.json'), JSON.stringify(saved, null, 1));
  const written = await report(saved);
  process.stderr.write(`report: ${written.join(', ')} (${elapsed()})\n`);
} finally {
  // On a Redis the bench did not start, it leaves none of its keys (fencing keys outlive locks).
  if (!server.private) await clean(stats, false).catch(() => undefined);
  stats.disconnect();
  link?.close();
  log.end();
  await server.stop();
}

// A full run goes on with the family's own benches, each on private servers of its own, one after
// another: the semaphore against redis-semaphore, the read-write lock against lock() under 90 %
// reads, Redlock against redlock, @sesamecare-oss/redlock and redlock-universal. Each prints its
// table and writes docs/benchmarks/<name>.md.
if (full) {
  for (const script of ['semaphore.ts', 'rw-lock.ts', 'redlock.ts']) {
    process.stderr.write(`\n${script}\n`);
    const ran = spawnSync(process.execPath, ['--import', 'tsx', script], { cwd: here, stdio: 'inherit' });
    if (ran.status !== 0) process.exitCode = 1;
  }
}
