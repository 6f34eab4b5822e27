// A worker: one process, one client of one library. It sets up, waits for the orchestrator's 'go',
// runs its part of a scenario and reports what it measured. Forked by run.ts.
import { setTimeout as sleep } from 'node:timers/promises';
import { load } from '../adapters/index.ts';
import type { Held, LockAdapter } from '../adapters/types.ts';
import { now } from './clock.ts';
import { parent } from './fork.ts';
import type { FromWorker, Interval, ScenarioId, ScenarioParams, ToWorker, WorkerResult } from './protocol.ts';
import { instrument, type TraceEvent } from './trace.ts';
import { NAME_PREFIX } from './redis-stats.ts';

/** To the orchestrator, and its next message of one of some types. */
const { send, next } = parent<ToWorker, FromWorker>();

/** The measured critical sections, counted for a 'progress' question. */
let measured = 0;
process.on('message', (message: ToWorker) => {
  if (message.type === 'progress') send({ type: 'progress', acquired: measured });
});

/** The in-process half of the overlap check: a lock entered while this process is inside it. */
class Sections {
  readonly intervals: Interval[] = [];
  overlaps = 0;
  readonly #inside = new Map<string, number>();

  constructor(readonly counted = true) {}

  enter(name: string): number {
    if (this.counted) measured++;
    const inside = (this.#inside.get(name) ?? 0) + 1;
    if (inside > 1) this.overlaps++;
    this.#inside.set(name, inside);
    return now();
  }

  leave(name: string, enteredAt: number): Interval {
    const interval: Interval = [enteredAt, now(), name];
    this.intervals.push(interval);
    this.#inside.set(name, (this.#inside.get(name) ?? 1) - 1);
    return interval;
  }
}

function emptyResult(sections: Sections): WorkerResult {
  return { intervals: sections.intervals, waits: [], rounds: [], perLoop: [], localOverlaps: sections.overlaps, cpuMicros: 0 };
}

/**
 * Every lock name the bench uses starts with NAME_PREFIX, whatever the library makes of it, so that
 * on a Redis the bench did not start it deletes only its own keys (redis-stats.ts, clean).
 */
function prefixed(adapter: LockAdapter): LockAdapter {
  return {
    acquire: (name) => adapter.acquire(`${NAME_PREFIX}${name}`),
    ...(adapter.reenter ? { reenter: (name: string, rounds: number) => adapter.reenter!(`${NAME_PREFIX}${name}`, rounds) } : {}),
    close: () => adapter.close(),
  };
}

/** One acquire, a critical section of `holdMs` (0: none), one release. */
async function once(adapter: LockAdapter, sections: Sections, name: string, holdMs: number, waits: number[]): Promise<void> {
  const calledAt = now();
  const held: Held = await adapter.acquire(name);
  const enteredAt = sections.enter(name);
  waits.push(enteredAt - calledAt);
  if (holdMs > 0) await sleep(holdMs);
  const interval = sections.leave(name, enteredAt);
  interval[4] = calledAt;
  await held.release();
  interval[3] = now();
}

async function uncontended(adapter: LockAdapter, params: ScenarioParams): Promise<WorkerResult> {
  const sections = new Sections();
  const result = emptyResult(sections);
  for (let i = 0; i < (params.rounds ?? 0); i++) {
    const start = now();
    await once(adapter, sections, 'uncontended', 0, result.waits);
    result.rounds.push(now() - start);
  }
  result.localOverlaps = sections.overlaps;
  return result;
}

async function reentrant(adapter: LockAdapter, params: ScenarioParams): Promise<WorkerResult> {
  if (!adapter.reenter) throw new Error('this library cannot re-enter a lock');
  const result = emptyResult(new Sections());
  result.rounds = await adapter.reenter('reentrant', params.rounds ?? 0);
  return result;
}

async function contended(adapter: LockAdapter, params: ScenarioParams, endAt: number): Promise<WorkerResult> {
  const sections = new Sections();
  const result = emptyResult(sections);
  const loops = Array.from({ length: params.loops ?? 1 }, async (_, loop) => {
    result.perLoop[loop] = 0;
    while (now() < endAt) {
      await once(adapter, sections, 'contended', params.holdMs ?? 1, result.waits);
      result.perLoop[loop]!++;
      await sleep(params.thinkMs ?? 5);
    }
  });
  await Promise.all(loops);
  result.localOverlaps = sections.overlaps;
  return result;
}

/** The holder of the herd's lock: worker 0 takes it before the waiters start and lets it go on 'release'. */
async function holdForHerd(adapter: LockAdapter, sections: Sections): Promise<() => Promise<void>> {
  const held = await adapter.acquire('herd');
  const enteredAt = sections.enter('herd');
  return async () => {
    sections.leave('herd', enteredAt);
    await held.release();
  };
}

async function herd(adapter: LockAdapter, params: ScenarioParams, sections: Sections): Promise<WorkerResult> {
  const result = emptyResult(sections);
  const waiters = Array.from({ length: params.waiters ?? 0 }, () => once(adapter, sections, 'herd', 0, result.waits));
  send({ type: 'waiting' });
  await Promise.all(waiters);
  result.localOverlaps = sections.overlaps;
  return result;
}

function heapUsed(): number {
  globalThis.gc?.();
  globalThis.gc?.();
  return process.memoryUsage().heapUsed;
}

async function many(adapter: LockAdapter, params: ScenarioParams): Promise<WorkerResult> {
  const sections = new Sections();
  const result = emptyResult(sections);
  const names = Array.from({ length: params.names ?? 0 }, (_, i) => `many:${i}`);
  const holders = await Promise.all(
    names.map(async (name) => {
      const held = await adapter.acquire(name);
      return { name, held, enteredAt: sections.enter(name) };
    }),
  );
  const before = heapUsed();
  const waiters = names.flatMap((name) => Array.from({ length: params.waitersPerName ?? 2 }, () => once(adapter, sections, name, 0, result.waits)));
  await sleep(params.settleMs ?? 500);
  result.bytesPerWaiter = (heapUsed() - before) / waiters.length;
  result.releasedAt = now();
  await Promise.all(
    holders.map(async ({ name, held, enteredAt }) => {
      sections.leave(name, enteredAt);
      await held.release();
    }),
  );
  await Promise.all(waiters);
  result.localOverlaps = sections.overlaps;
  return result;
}

async function main(): Promise<void> {
  const setup = await next('setup');
  const { scenario, params, index } = setup;
  const trace: TraceEvent[] = [];
  if (params.trace) instrument(trace);
  const adapter = prefixed(await (await load(setup.adapter))(setup.url));
  // Warm-up on a name of its own: connections open, scripts load, code is compiled.
  const warmups = scenario === 'uncontended' || scenario === 'reentrant' ? 200 : 1;
  const warm = new Sections(false);
  for (let i = 0; i < warmups; i++) await once(adapter, warm, `warmup:${process.pid}`, 0, []);
  if (scenario === 'reentrant') await adapter.reenter?.(`warmup:${process.pid}`, 50);
  send({ type: 'ready' });

  const sections = new Sections();
  let releaseHolder: (() => Promise<void>) | undefined;
  if (scenario === 'herd' && index === 0) {
    await next('hold');
    releaseHolder = await holdForHerd(adapter, sections);
    send({ type: 'holding' });
    void next('release').then(() => releaseHolder?.());
  }
  // Scenario 1 is told to go once per slice; the others once.
  for (let go = await next('go', 'close'); go.type === 'go'; go = await next('go', 'close')) {
    const { endAt, rounds } = go;
    const run: Record<ScenarioId, () => Promise<WorkerResult>> = {
      uncontended: () => uncontended(adapter, rounds === undefined ? params : { ...params, rounds }),
      reentrant: () => reentrant(adapter, params),
      contended: () => contended(adapter, params, endAt ?? now()),
      herd: () => herd(adapter, params, sections),
      many: () => many(adapter, params),
    };
    trace.length = 0;
    const cpuAtGo = process.cpuUsage();
    const result = await run[scenario]();
    const cpu = process.cpuUsage(cpuAtGo);
    result.cpuMicros = cpu.user + cpu.system;
    if (params.trace) result.trace = trace;
    send({ type: 'result', result });
  }

  // Some libraries leave timers behind (unref'd or not): a bounded close, then exit regardless.
  await Promise.race([adapter.close().catch(() => undefined), sleep(5_000)]);
  process.exit(0);
}

process.on('unhandledRejection', (error) => {
  send({ type: 'error', message: `unhandled rejection: ${error instanceof Error ? error.stack ?? error.message : String(error)}` });
});
main().catch((error: unknown) => {
  send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  setTimeout(() => process.exit(1), 100);
});
