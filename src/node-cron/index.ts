/**
 * node-cron's distributed runs on relock's jobs: {@link runCoordinator} is node-cron's
 * `RunCoordinator`, so that each fire of a `distributed` task runs in one process of many. node-cron
 * (4.5 or later) is an optional peer dependency of relock; this module imports nothing of it. See
 * docs/jobs.md.
 *
 * @module relock/node-cron
 */
import type { Job } from '../api.ts';
import type { JobOptions } from '../options.ts';

/** What {@link runCoordinator} needs of a client: `LockClient#job`. */
export interface JobClient {
  /** A job by name (`LockClient#job`): each fire of a task becomes one. */
  job(name: string, options: JobOptions): Job;
}

/** Options of {@link runCoordinator}. */
export interface RunCoordinatorOptions {
  /**
   * How long a fire's lock stays taken from the start of its run, so that a process whose timer or
   * clock is up to this late does not run the same fire again: make it longer than the skew between
   * your processes. At most `atMostMs`.
   * @default node-cron's `ttlMs` (the task's `distributedLease`, 30 s by default), or `atMostMs` when shorter
   */
  atLeastMs?: number;
  /**
   * The longest one run may hold its lock (`job()`'s `atMostMs`): then the lock ends, as if the
   * run had finished. Each fire has a lock of its own, so a long run never holds back the next fire.
   * @default 3,600,000 (one hour), or `atLeastMs` when longer
   */
  atMostMs?: number;
  /**
   * The job names are `${prefix}${key}`, node-cron's key being `${task name}:${fire time, ISO 8601}`.
   * @default 'node-cron:'
   */
  prefix?: string;
}

/** node-cron's `RunCoordinator` (node-cron 4.5+), as {@link runCoordinator} implements it. */
export interface RunCoordinator {
  /** Whether this process runs the fire `key`: resolves true once it holds the fire's lock. */
  shouldRun(key: string, ttlMs: number): Promise<boolean>;
  /**
   * The run of `key` ended: its lock stays taken until `atLeastMs` after its start, then frees.
   * Rejects when the lock was lost while the task ran (another process may have run the fire too).
   */
  onComplete(key: string): Promise<void>;
}

const HOUR_MS = 3_600_000;
/** node-cron names an unnamed task by a random UUID: its keys differ in every process. */
const UNNAMED = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:/i;

/**
 * node-cron's `RunCoordinator` over relock's jobs (`client.job()`): each fire of a task becomes a job
 * named after it, run by the first process that takes it; the others skip the fire (node-cron emits
 * `execution:skipped` with reason `not-elected`). The lock is kept while the task runs (the
 * watchdog renews it, for at most `atMostMs`) and for `atLeastMs` from the run's start, so processes
 * whose clocks and timers differ by less than that run each fire once. Give every distributed task a
 * `name`, the same in every process: node-cron names an unnamed one by a random id, which this
 * coordinator refuses (the fire is skipped and node-cron logs the error).
 *
 * When Redis cannot be reached, `shouldRun` rejects and node-cron skips the fire (fail-closed).
 *
 * @param client a `LockClient` of one server or a Cluster (a Redlock client and the Redisson layout
 *   have no jobs: the `LockError` `ERR_LOCK_UNSUPPORTED` is thrown here)
 * @throws {TypeError | RangeError} for bad options, before any I/O.
 * @example
 * ```ts
 * import cron from 'node-cron';
 * import { LockClient } from 'relock';
 * import { runCoordinator } from 'relock/node-cron';
 *
 * const client = new LockClient({ redis: process.env.REDIS_URL });
 * cron.schedule('0 3 * * *', buildReport, {
 *   name: 'nightly-report',
 *   distributed: true,
 *   runCoordinator: runCoordinator(client, { atLeastMs: 60_000 }),
 * });
 * ```
 */
export function runCoordinator(client: JobClient, options: RunCoordinatorOptions = {}): RunCoordinator {
  if (typeof client !== 'object' || client === null || typeof client.job !== 'function') {
    throw new TypeError('Expected `client` to be a LockClient');
  }
  if (typeof options !== 'object' || options === null) throw new TypeError('Expected `options` to be an object');
  const { prefix = 'node-cron:', atLeastMs, atMostMs } = options;
  if (typeof prefix !== 'string') throw new TypeError(`Expected \`prefix\` to be a string, got ${typeof prefix}`);
  const settings = (ttlMs: number): JobOptions => {
    // node-cron's ttlMs, but never past an atMostMs given (that would refuse every fire).
    const least = atLeastMs ?? (atMostMs === undefined ? ttlMs : Math.min(ttlMs, atMostMs));
    return { atLeastMs: least, atMostMs: atMostMs ?? Math.max(HOUR_MS, least) };
  };
  // Checks the options and the client's support now (no I/O), not at the first fire.
  client.job(`${prefix}options`, settings(atLeastMs ?? 0));

  /** The runs under way in this process, by key: what ends each, and the run itself. */
  const runs = new Map<string, { end: () => void; run: Promise<unknown> }>();
  return {
    shouldRun(key, ttlMs) {
      if (UNNAMED.test(key)) {
        return Promise.reject(new TypeError(`node-cron task ${key.slice(0, 36)} has no name: give it one (the same in every process), or each process runs every fire`));
      }
      const job = client.job(`${prefix}${key}`, settings(ttlMs));
      return new Promise<boolean>((resolve, reject) => {
        let end!: () => void;
        const ended = new Promise<void>((resolve) => (end = resolve));
        const run: Promise<unknown> = job.run(() => {
          runs.set(key, { end, run });
          resolve(true);
          return ended;
        });
        // Before the task started: a skip or an error for shouldRun; after: onComplete's to report.
        run.then((result) => (result as { ran: boolean }).ran || resolve(false), reject);
      });
    },
    async onComplete(key) {
      const running = runs.get(key);
      if (!running) return;
      runs.delete(key);
      running.end();
      await running.run;
    },
  };
}
