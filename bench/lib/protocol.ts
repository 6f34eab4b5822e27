import type { TraceEvent } from './trace.ts';

// The messages between the orchestrator (run.ts) and its workers, one forked process per client.

export type ScenarioId = 'uncontended' | 'reentrant' | 'contended' | 'herd' | 'many';

export interface ScenarioParams {
  /** uncontended, reentrant: measured acquire+release rounds. */
  rounds?: number;
  /** contended: loops per process, hold and think times, measured window. */
  loops?: number;
  holdMs?: number;
  thinkMs?: number;
  /** herd: waiters started by this worker. */
  waiters?: number;
  /** many: lock names and waiters per name. */
  names?: number;
  waitersPerName?: number;
  /** many: how long the waiters are left to queue before memory is read. */
  settleMs?: number;
  /** Stamp lock commands and pub/sub messages (lib/trace.ts): a diagnostic run, not a measured one. */
  trace?: boolean;
}

/**
 * A critical section as seen by its holder: [entered, left, lock name, its release resolved, its
 * acquire called]. The last is set where the section comes from a measured acquire (worker.ts, once):
 * with the entry it orders callers and grants across processes (stats.ts, overtaken, waitedHandOffs).
 */
export type Interval = [number, number, string, number?, number?];

export interface WorkerResult {
  /** Critical sections, on the shared monotonic clock (lib/clock.ts). */
  intervals: Interval[];
  /** Milliseconds from the acquire call to the lock being held. */
  waits: number[];
  /** uncontended, reentrant: milliseconds of each acquire+release round. */
  rounds: number[];
  /** contended: acquisitions per loop. */
  perLoop: number[];
  /** Critical sections that found another one of this process inside. */
  localOverlaps: number;
  /** many: heap bytes per waiting acquirer. */
  bytesPerWaiter?: number;
  /** many: when the holders were released. */
  releasedAt?: number;
  /** CPU time this process spent from 'go' to its result, in microseconds. */
  cpuMicros: number;
  /** A traced run's commands and messages. */
  trace?: TraceEvent[];
}

export type ToWorker =
  | { type: 'setup'; adapter: string; url: string; scenario: ScenarioId; params: ScenarioParams; index: number }
  /** Start (again: scenario 1 runs in slices); `rounds` overrides the scenario's for this slice. */
  | { type: 'go'; endAt?: number; rounds?: number }
  | { type: 'hold' }
  | { type: 'release' }
  /** How many acquisitions so far: asked when a run is out of time. */
  | { type: 'progress' }
  | { type: 'close' };

export type FromWorker =
  | { type: 'ready' }
  | { type: 'holding' }
  | { type: 'waiting' }
  | { type: 'result'; result: WorkerResult }
  | { type: 'progress'; acquired: number }
  | { type: 'error'; message: string };
