// What a run measures, and how big: sized so the whole of `npm run bench` stays under 20 minutes
// on 2 shared cores (see docs/benchmarks.md, "Sizing").
import type { ScenarioId } from './protocol.ts';
import type { CaseSpec } from './runner.ts';

export interface Sizes {
  runs: number;
  rounds: number;
  contendedMs: number;
  herd: number[];
  names: number;
}

export const FULL: Sizes = { runs: 3, rounds: 6000, contendedMs: 3000, herd: [50, 200, 800], names: 1000 };
export const QUICK: Sizes = { runs: 1, rounds: 500, contendedMs: 1500, herd: [50, 200], names: 200 };

export const SCENARIOS: readonly ScenarioId[] = ['uncontended', 'reentrant', 'contended', 'herd', 'many'];

export const TITLES: Record<ScenarioId, string> = {
  uncontended: '1. Uncontended: one caller, acquire then release',
  reentrant: '2. Reentrant: a nested acquire inside a held lock',
  contended: '3. Contended hand-off: 4 processes x 2 loops, hold 1 ms, think 5 ms',
  herd: '4. The herd: waiters across 4 processes on one held lock, released once each in turn',
  many: '5. Many locks: lock names each with 2 waiters, in one process',
};

/**
 * The targets the report checks (docs/benchmarks.md, "Targets"), each a ratio or a count within one
 * run, so that a shared machine's drift does not decide them. The labels are built from these.
 */
export const TARGETS = {
  /**
   * Scenario 1: relock's rate against the SET NX floor (floor-poll), the fastest peer, redis-semaphore
   * and redlock; the commands inside its scripts, its client CPU against the floor's; relock over
   * node-redis and GLIDE against the floor over the same client (issue 34).
   */
  uncontended: { floor: 0.9, fastestPeer: 0.95, redisSemaphore: 0.85, redlock: 1, scriptCalls: 2, innerCommands: 7, clientCpuVsFloor: 1.25, clientFloor: 0.85 },
  /** Scenario 3: utilisation (time held / wall). */
  contended: { utilisation: 0.8 },
  /** Scenario 4: Redis CPU per acquisition max/min over the sizes, and commands per acquisition. */
  herd: { cpuSpread: 1.5, commands: 20 },
  /** Scenario 5: connections per client. */
  many: { connections: 2 },
  /** The fair lock: p99 wait against the best peer and floor-pubsub, utilisation against floor-pubsub, share overtaken, load. */
  fair: { p99VsPeer: 0.4, p99VsFloor: 0.5, utilisationVsFloor: 0.95, overtaken: 0.005, commands: 22, scripts: 3, cpuSpread: 1.5 },
  /** lock() against floor-pubsub in scenario 3. */
  lock: { utilisationVsFloor: 0.95 },
  /** bench/semaphore.ts: relock's semaphore against redis-semaphore's uncontended ops/s (at least level). */
  semaphore: { opsVsPeer: 1 },
  /** bench/rw-lock.ts: read-heavy throughput of readWriteLock() over lock(). */
  rwLock: { readHeavyVsLock: 3 },
} as const;

/** Holds and queues of the herd and many-locks scenarios settle this long before the release. */
export const HERD_SETTLE_MS = 150;
export const MANY_SETTLE_MS = 500;
/** Scenario 1's rounds run in this many interleaved slices per repetition (runner.ts, runSliced). */
export const SLICES = 30;
/** The herd and many-locks runs are stopped after this long. */
export const LONG_RUN_TIMEOUT_MS = 60_000;

/** The variants of a scenario for one library: one, or one per herd size. */
export function cases(scenario: ScenarioId, adapter: string, sizes: Sizes): CaseSpec[] {
  switch (scenario) {
    case 'uncontended':
    case 'reentrant':
      return [{ scenario, size: undefined, adapter, processes: 1, params: () => ({ rounds: sizes.rounds }), timeoutMs: 120_000 }];
    case 'contended':
      return [
        {
          scenario,
          size: undefined,
          adapter,
          processes: 4,
          params: () => ({ loops: 2, holdMs: 1, thinkMs: 5 }),
          durationMs: sizes.contendedMs,
          warmMs: 250,
          timeoutMs: sizes.contendedMs + 60_000,
        },
      ];
    case 'herd':
      return sizes.herd.map((waiters) => ({
        scenario,
        size: waiters,
        adapter,
        processes: 4,
        // 50 waiters over 4 processes: 13, 13, 12, 12.
        params: (index) => ({ waiters: Math.floor(waiters / 4) + (index < waiters % 4 ? 1 : 0) }),
        settleMs: HERD_SETTLE_MS,
        timeoutMs: LONG_RUN_TIMEOUT_MS,
      }));
    case 'many':
      return [
        {
          scenario,
          size: sizes.names,
          adapter,
          processes: 1,
          params: () => ({ names: sizes.names, waitersPerName: 2, settleMs: MANY_SETTLE_MS }),
          timeoutMs: LONG_RUN_TIMEOUT_MS,
        },
      ];
  }
}

/**
 * One traced run of the contended scenario (lib/trace.ts) for a pub/sub library on ioredis: it is
 * not among the measured runs, only the source of "where a hand-off's time goes".
 */
export function traceCase(adapter: string, sizes: Sizes): CaseSpec {
  const [spec] = cases('contended', adapter, sizes);
  return { ...spec!, params: (index) => ({ ...spec!.params(index), trace: true }) };
}
