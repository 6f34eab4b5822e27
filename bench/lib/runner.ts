// Runs one case: one library, one scenario, one size, one repetition. Forks the workers, resets
// Redis's counters once every client is connected and warm, says 'go', and turns what the workers
// and Redis report into the figures of the report.
import { createWriteStream, type WriteStream } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';
import { now } from './clock.ts';
import { Worker } from './fork.ts';
import type { FromWorker, Interval, ScenarioId, ScenarioParams, ToWorker, WorkerResult } from './protocol.ts';
import { clean, reset, snapshot, totalCommands, type Snapshot } from './redis-stats.ts';
import { handOffLegs, type HandOffLegs } from './trace.ts';
import { handOffs, overlaps, overtaken, percentile, utilisation, utilisationToRelease, waitedHandOffs } from './stats.ts';

const WORKER = fileURLToPath(new URL('./worker.ts', import.meta.url));

export interface CaseSpec {
  readonly scenario: ScenarioId;
  /** What the records call it when it is not the adapter's id (a library measured twice). */
  readonly label?: string;
  /** herd: total waiters; many: lock names; else undefined. */
  readonly size: number | undefined;
  readonly adapter: string;
  readonly processes: number;
  /** The parameters of worker i. */
  params(index: number): ScenarioParams;
  /** contended: the measured window, and the start of it left out of utilisation. */
  readonly durationMs?: number;
  readonly warmMs?: number;
  /** herd: how long the waiters queue before the holder lets go. */
  readonly settleMs?: number;
  /** A run that takes longer is stopped and reported as such. */
  readonly timeoutMs: number;
}

export interface CaseFigures {
  acquisitions: number;
  opsPerSec: number;
  latency: { p50: number; p99: number; max: number };
  waitP99: number;
  /**
   * From one holder leaving to the next entering, in ms. Contended: only hand-offs to a caller that
   * was already waiting (stats.ts, waitedHandOffs); elsewhere every gap between holders.
   */
  handOffP50: number;
  handOffP99?: number;
  /** contended: share of acquisitions overtaken by a caller that called at least 1 ms later. */
  overtaken?: number;
  utilisation?: number;
  /** contended: the same, each hold lasting until its release resolved. */
  utilisationToRelease?: number;
  fairness?: number;
  commandsPerAcq: number;
  scriptCallsPerAcq: number;
  cpuUsPerAcq: number;
  connectionsPerClient: number;
  overlaps: number;
  bytesPerWaiter?: number;
  /** herd: the load of the hand-off phase alone, from the holder's release to the last waiter out. */
  handOffCommandsPerAcq?: number;
  handOffCpuUsPerAcq?: number;
  /** CPU of the client processes per acquisition, from 'go' to their results. */
  clientCpuUsPerAcq: number;
  /** contended, traced runs only: where a hand-off's time goes. */
  legs?: HandOffLegs;
  /** The eight commands called most, per acquisition: where the load comes from. */
  topCommands: [string, number][];
}

export type CaseResult = { ok: true; figures: CaseFigures; seconds: number } | { ok: false; error: string; seconds: number };

/** A worker of lib/worker.ts; --expose-gc for scenario 5's heap readings. */
type MainWorker = Worker<ToWorker, FromWorker>;
const forkWorker = (log: WriteStream): MainWorker => new Worker(WORKER, [], { log, execArgv: ['--expose-gc'] });

function legsOf(spec: CaseSpec, results: WorkerResult[]): { legs?: HandOffLegs } {
  if (!spec.params(0).trace) return {};
  const sections = results.flatMap((result, process) => result.intervals.map((interval) => ({ process, interval })));
  const legs = handOffLegs(sections, results.map((result) => result.trace ?? []));
  return legs ? { legs } : {};
}

interface Load {
  commands: Map<string, number>;
  cpuSeconds: number;
  connections: number;
}

function figures(spec: CaseSpec, results: WorkerResult[], goAt: number, endAt: number, load: Load, handOff: Load | undefined): CaseFigures {
  const intervals: Interval[] = results.flatMap((result) => result.intervals);
  const waits = results.flatMap((result) => result.waits);
  const rounds = results.flatMap((result) => result.rounds);
  const gaps = handOffs(intervals);
  const handOffGaps = spec.scenario === 'contended' ? waitedHandOffs(intervals) : gaps;
  let acquisitions: number;
  let opsPerSec: number;
  let latencySamples: number[];
  const lastExit = Math.max(...intervals.map((interval) => interval[1]));
  switch (spec.scenario) {
    case 'uncontended':
    case 'reentrant':
      acquisitions = rounds.length;
      opsPerSec = (rounds.length / rounds.reduce((sum, ms) => sum + ms, 0)) * 1000;
      latencySamples = rounds;
      break;
    case 'contended': {
      acquisitions = waits.length;
      const inWindow = intervals.filter(([enter]) => enter >= goAt && enter < endAt).length;
      opsPerSec = (inWindow / (endAt - goAt)) * 1000;
      latencySamples = waits;
      break;
    }
    case 'herd': {
      acquisitions = waits.length;
      // From the holder letting go to the last waiter leaving.
      const holderExit = Math.min(...intervals.map((interval) => interval[1]));
      opsPerSec = (acquisitions / (lastExit - holderExit)) * 1000;
      latencySamples = gaps;
      break;
    }
    case 'many': {
      acquisitions = intervals.length;
      const releasedAt = results[0]?.releasedAt ?? goAt;
      opsPerSec = (waits.length / (lastExit - releasedAt)) * 1000;
      latencySamples = gaps;
      break;
    }
  }
  const perLoop = results.flatMap((result) => result.perLoop);
  const commands = [...load.commands.entries()].sort((a, b) => b[1] - a[1]);
  const scriptCalls = (load.commands.get('evalsha') ?? 0) + (load.commands.get('eval') ?? 0) + (load.commands.get('evalsha_ro') ?? 0);
  return {
    acquisitions,
    opsPerSec,
    latency: { p50: percentile(latencySamples, 50), p99: percentile(latencySamples, 99), max: percentile(latencySamples, 100) },
    waitP99: percentile(waits, 99),
    handOffP50: percentile(handOffGaps, 50),
    handOffP99: percentile(handOffGaps, 99),
    ...(spec.scenario === 'contended'
      ? {
          overtaken: overtaken(intervals),
          utilisation: utilisation(intervals, goAt + (spec.warmMs ?? 0), endAt),
          utilisationToRelease: utilisationToRelease(intervals, goAt + (spec.warmMs ?? 0), endAt),
          fairness: Math.max(...perLoop) / Math.min(...perLoop),
        }
      : {}),
    commandsPerAcq: totalCommands({ ...load }) / acquisitions,
    scriptCallsPerAcq: scriptCalls / acquisitions,
    cpuUsPerAcq: (load.cpuSeconds * 1e6) / acquisitions,
    connectionsPerClient: load.connections / spec.processes,
    overlaps: Math.max(overlaps(intervals), results.reduce((sum, result) => sum + result.localOverlaps, 0)),
    ...(results[0]?.bytesPerWaiter !== undefined ? { bytesPerWaiter: results[0].bytesPerWaiter } : {}),
    ...(handOff
      ? {
          handOffCommandsPerAcq: totalCommands(handOff) / acquisitions,
          handOffCpuUsPerAcq: (handOff.cpuSeconds * 1e6) / acquisitions,
        }
      : {}),
    clientCpuUsPerAcq: results.reduce((sum, result) => sum + result.cpuMicros, 0) / acquisitions,
    ...legsOf(spec, results),
    topCommands: commands.slice(0, 8).map(([name, calls]) => [name, calls / acquisitions]),
  };
}

/** herd: the waiters (the holder took its lock before the count starts); many: holders and waiters. */
function expectedAcquisitions(spec: CaseSpec): number {
  let total = 0;
  for (let i = 0; i < spec.processes; i++) {
    const params = spec.params(i);
    total += spec.scenario === 'herd' ? (params.waiters ?? 0) : (params.names ?? 0) * (1 + (params.waitersPerName ?? 0));
  }
  return total;
}

export async function runCase(stats: Redis, url: string, spec: CaseSpec, log: WriteStream, flush: boolean): Promise<CaseResult> {
  const startedAt = now();
  const deadline = startedAt + spec.timeoutMs;
  await clean(stats, flush);
  await reset(stats);
  let phaseAt = startedAt;
  // BENCH_DEBUG=1 shows where a run's time goes: forking and warming up, running, closing.
  const phase = (name: string) => {
    if (process.env.BENCH_DEBUG) process.stderr.write(`[${name} ${(now() - phaseAt).toFixed(0)} ms] `);
    phaseAt = now();
  };
  const workers = Array.from({ length: spec.processes }, () => forkWorker(log));
  try {
    workers.forEach((worker, index) =>
      worker.send({ type: 'setup', adapter: spec.adapter, url, scenario: spec.scenario, params: spec.params(index), index }),
    );
    await Promise.all(workers.map((worker) => worker.expect('ready', deadline)));
    phase('setup');
    if (spec.scenario === 'herd') {
      workers[0]!.send({ type: 'hold' });
      await workers[0]!.expect('holding', deadline);
    }
    const connectionsAtSetup = (await snapshot(stats)).connections;
    await reset(stats);
    const before = await snapshot(stats);
    const goAt = now();
    const endAt = goAt + (spec.durationMs ?? 0);
    for (const worker of workers) worker.send({ type: 'go', endAt });
    let atRelease: Snapshot | undefined;
    if (spec.scenario === 'herd') {
      await Promise.all(workers.map((worker) => worker.expect('waiting', deadline)));
      await sleep(spec.settleMs ?? 0);
      atRelease = await snapshot(stats);
      workers[0]!.send({ type: 'release' });
    }
    phase('go');
    const results = await Promise.all(workers.map(async (worker) => (await worker.expect('result', deadline)).result));
    phase('run');
    const after = await snapshot(stats);
    const load: Load = {
      commands: after.commands,
      // Less what our own INFO calls cost Redis in between.
      cpuSeconds: after.cpuSeconds - before.cpuSeconds - (after.ownSeconds - before.ownSeconds),
      connections: connectionsAtSetup + after.connections,
    };
    const handOff: Load | undefined = atRelease && {
      commands: new Map([...after.commands].map(([name, calls]) => [name, calls - (atRelease.commands.get(name) ?? 0)])),
      cpuSeconds: after.cpuSeconds - atRelease.cpuSeconds - (after.ownSeconds - atRelease.ownSeconds),
      connections: after.connections - atRelease.connections,
    };
    const measuredEnd = spec.scenario === 'contended' ? endAt : now();
    const result = figures(spec, results, goAt, measuredEnd, load, handOff);
    await Promise.all(workers.map((worker) => worker.close()));
    phase('close');
    return { ok: true, figures: result, seconds: (now() - startedAt) / 1000 };
  } catch (error) {
    let message = error instanceof Error ? error.message : String(error);
    if (message.startsWith('timed out')) {
      const counts = await Promise.all(workers.map(async (worker) => (await worker.ask({ type: 'progress' }, 'progress', 1000))?.acquired));
      const expected = spec.scenario === 'herd' || spec.scenario === 'many' ? expectedAcquisitions(spec) : undefined;
      const acquired = counts.reduce<number>((sum, count) => sum + (count ?? 0), 0);
      message = `did not finish within ${spec.timeoutMs / 1000} s${expected ? `: ${acquired} of ${expected} acquisitions done` : ''}`;
    }
    for (const worker of workers) worker.kill();
    return { ok: false, error: message, seconds: (now() - startedAt) / 1000 };
  }
}

/** What the workers print (libraries' warnings and errors), one file per run of the bench. */
export function openLog(path: string): WriteStream {
  return createWriteStream(path, { flags: 'w' });
}

/**
 * Scenario 1, all libraries in one go: a worker each, then `slices` turns in which every library
 * runs its share of the rounds, one after the other (the first to go rotating). The machine is shared
 * and its load comes in bursts: this way a burst lands on every library alike instead of on one.
 */
export async function runSliced(
  stats: Redis,
  url: string,
  specs: CaseSpec[],
  slices: number,
  log: WriteStream,
  flush: boolean,
  progress: (slice: number) => void = () => undefined,
): Promise<CaseResult[]> {
  const startedAt = now();
  interface Entry {
    spec: CaseSpec;
    worker: MainWorker;
    deadline: number;
    results: WorkerResult[];
    load: Load;
    seconds: number;
    error?: string;
  }
  const entries: Entry[] = [];
  await clean(stats, flush);
  for (const spec of specs) {
    const began = now();
    await reset(stats);
    const worker = forkWorker(log);
    const entry: Entry = { spec, worker, deadline: began + spec.timeoutMs, results: [], load: { commands: new Map(), cpuSeconds: 0, connections: 0 }, seconds: 0 };
    entries.push(entry);
    try {
      worker.send({ type: 'setup', adapter: spec.adapter, url, scenario: spec.scenario, params: spec.params(0), index: 0 });
      await worker.expect('ready', entry.deadline);
      entry.load.connections = (await snapshot(stats)).connections;
    } catch (error) {
      entry.error = error instanceof Error ? error.message : String(error);
      worker.kill();
    }
    entry.seconds += (now() - began) / 1000;
  }
  for (let slice = 0; slice < slices; slice++) {
    for (let turn = 0; turn < entries.length; turn++) {
      const entry = entries[(slice + turn) % entries.length]!;
      if (entry.error) continue;
      const began = now();
      const rounds = Math.floor((entry.spec.params(0).rounds ?? 0) / slices);
      try {
        await reset(stats);
        const before = await snapshot(stats);
        entry.worker.send({ type: 'go', rounds });
        entry.results.push((await entry.worker.expect('result', entry.deadline)).result);
        const after = await snapshot(stats);
        for (const [name, calls] of after.commands) entry.load.commands.set(name, (entry.load.commands.get(name) ?? 0) + calls);
        entry.load.cpuSeconds += after.cpuSeconds - before.cpuSeconds - (after.ownSeconds - before.ownSeconds);
        entry.load.connections += after.connections;
      } catch (error) {
        entry.error = error instanceof Error ? error.message : String(error);
        entry.worker.kill();
      }
      entry.seconds += (now() - began) / 1000;
    }
    progress(slice + 1);
  }
  await Promise.all(entries.map((entry) => entry.worker.close()));
  return entries.map((entry): CaseResult => {
    if (entry.error) return { ok: false, error: entry.error, seconds: entry.seconds };
    const merged: WorkerResult = {
      intervals: entry.results.flatMap((r) => r.intervals),
      waits: entry.results.flatMap((r) => r.waits),
      rounds: entry.results.flatMap((r) => r.rounds),
      perLoop: [],
      localOverlaps: entry.results.reduce((sum, r) => sum + r.localOverlaps, 0),
      cpuMicros: entry.results.reduce((sum, r) => sum + r.cpuMicros, 0),
    };
    return { ok: true, figures: figures(entry.spec, [merged], startedAt, now(), entry.load, undefined), seconds: entry.seconds };
  });
}
