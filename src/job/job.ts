// A job run at most once per window: a lock taken without waiting, cut at atMostMs, and kept taken
// until atLeastMs after its start when the run ends (the lock's release script, with a window).
import type { Job, JobResult, Lease, Lock } from '../api.ts';
import type { LockLostError } from '../errors.ts';
import { runExclusive, type LeaseImpl } from '../lease.ts';
import { checkFunction, checkMs, checkOptions, MIN_FIXED_LEASE_MS } from '../validate.ts';

/** A job's options, checked. */
export interface JobSettings {
  readonly atLeastMs: number;
  readonly atMostMs: number;
}

/** The job's options, checked: `atMostMs` required, `atLeastMs` from 0 to `atMostMs`. */
export function checkJobOptions(options: unknown): JobSettings {
  const o = checkOptions('job()', options, ['atLeastMs', 'atMostMs']);
  const atMostMs = checkMs('atMostMs', o.atMostMs, MIN_FIXED_LEASE_MS);
  if (atMostMs === undefined) throw new TypeError('Expected `atMostMs` in the options of job(): the longest a run may hold the lock, in milliseconds');
  const atLeastMs = checkMs('atLeastMs', o.atLeastMs, 0) ?? 0;
  if (atLeastMs > atMostMs) throw new RangeError(`Expected \`atLeastMs\` (${atLeastMs}) to be at most \`atMostMs\` (${atMostMs})`);
  return { atLeastMs, atMostMs };
}

export class JobImpl implements Job {
  readonly name: string;
  readonly #lock: Lock;
  readonly #options: JobSettings;
  /** Whether the lock is in a finished run's window (its hash holds the field "window"), not held by a run. */
  readonly #inWindow: () => Promise<boolean>;

  /** `lock`: the job's lock, whose release script keeps a window (the lock on one server or a Cluster). */
  constructor(lock: Lock, options: JobSettings, inWindow: () => Promise<boolean>) {
    this.name = lock.name;
    this.#lock = lock;
    this.#options = options;
    this.#inWindow = inWindow;
  }

  async run<T>(fn: (lease: Lease) => T | Promise<T>): Promise<JobResult<T>> {
    checkFunction('fn', fn);
    const lease = (await this.#lock.tryAcquire({ maxHoldMs: this.#options.atMostMs })) as LeaseImpl | null;
    if (lease === null) return { ran: false, reason: (await this.#inWindow()) ? 'window' : 'held' };
    if (lease.holdCount > 1) {
      // Inside a run of this job: that run is the one.
      await lease.release();
      return { ran: false, reason: 'held' };
    }
    const { atLeastMs } = this.#options;
    // At atMostMs the lease ends on Redis too, whether fn stops or not (the window is over by then).
    let cut: Promise<void> | undefined;
    const onAbort = () => {
      if ((lease.signal.reason as LockLostError).code === 'ERR_LOCK_MAX_HOLD') cut = lease.release().catch(() => undefined);
    };
    lease.signal.addEventListener('abort', onAbort, { once: true });
    let value: T;
    try {
      value = await runExclusive(lease, fn, (held) => (atLeastMs > 0 ? held.releaseKeeping(atLeastMs) : held.release()));
    } finally {
      lease.signal.removeEventListener('abort', onAbort);
      await cut;
    }
    if (cut) throw lease.signal.reason;
    return { ran: true, value };
  }
}
