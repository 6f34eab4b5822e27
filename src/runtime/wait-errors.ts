// The errors a wait ends with, and what it has seen for them: a timeout (worded by its kind), Redis
// or a Redlock majority unreachable, a lease too short for the round trip.
import { LockError, LockTimeoutError } from '../errors.ts';
import type { FrameRequest } from './acquire.ts';
import type { Runtime } from './runtime.ts';

/** An attempt out this long when a wait ends makes its error ERR_LOCK_UNREACHABLE. */
const UNANSWERED_MS = 1_000;

/** How a wait's errors put it: `${failed} within N ms: ${busy}`. */
export interface WaitWords {
  readonly failed: (name: string) => string;
  readonly busy: string;
}

const LOCK_WORDS: WaitWords = { failed: (name) => `Lock "${name}" was not acquired`, busy: 'it is held' };

/** What a wait has seen, for the error it ends with. */
export interface WaitState {
  /** The last connection failure, while retrying it. */
  unreachable: LockError | undefined;
  /** An attempt is out now. */
  inFlight: boolean;
  /** clock.now() when the attempt out now was sent. */
  sentAt: number;
}

/** A wait with an end (not a single try, not unbounded): it rides out an unreachable Redis until then. */
export function isFiniteWait(waitMs: number): boolean {
  return waitMs > 0 && waitMs !== Number.POSITIVE_INFINITY;
}

/** A failure to reach Redis, or (Redlock) a majority of its masters, as opposed to an answer from it. */
export function isUnreachable(error: unknown): error is LockError {
  return error instanceof LockError && (error.code === 'ERR_LOCK_UNREACHABLE' || error.code === 'ERR_LOCK_NO_QUORUM');
}

/** The LockTimeoutError of a wait that ended after `waitMs` with its lock held (its latch not open). */
export function timedOut(request: { readonly name: string; readonly words?: WaitWords | undefined }, waitMs: number): LockTimeoutError {
  const words = request.words ?? LOCK_WORDS;
  return new LockTimeoutError(`${words.failed(request.name)} within ${waitMs} ms: ${words.busy}`, { lockName: request.name });
}

/** The error a finite wait ends with: a timeout, or Redis unreachable when that is why. */
export function timeoutError(runtime: Runtime, request: FrameRequest<unknown>, state: WaitState): LockError {
  const { name, waitMs } = request;
  const failed = (request.words ?? LOCK_WORDS).failed(name);
  // An attempt unanswered for a second is a Redis that does not answer, connected or not; one sent a
  // moment ago only lost the race with the timer.
  const unanswered = state.inFlight && runtime.watchdog.clock.now() - state.sentAt > UNANSWERED_MS;
  // Redlock: the masters a majority could not be reached on are named in the quorum's error.
  if (state.unreachable?.code === 'ERR_LOCK_NO_QUORUM') {
    return new LockError(`${failed} within ${waitMs} ms: ${state.unreachable.message}`, {
      cause: state.unreachable.cause,
      lockName: name,
      code: 'ERR_LOCK_NO_QUORUM',
    });
  }
  // Servers deciding together: runner is one server's; an attempt still out when the wait ends is
  // one they did not decide in time.
  if (runtime.joint && !state.unreachable && state.inFlight) {
    if (!unanswered && runtime.runner.ready) return timedOut(request, waitMs);
    return runtime.joint.unanswered(failed, waitMs, runtime.runner.unreachableCause(), name);
  }
  if (state.unreachable || (state.inFlight && !runtime.runner.ready) || unanswered) {
    const cause = state.unreachable?.cause ?? runtime.runner.unreachableCause();
    return new LockError(`${failed} within ${waitMs} ms: Redis could not be reached (${(cause as Error).message})`, {
      cause,
      lockName: name,
      code: 'ERR_LOCK_UNREACHABLE',
    });
  }
  return timedOut(request, waitMs);
}

/** The error of a lease that ended before Redis's reply arrived, `times` times in a row. */
export function leaseTooShort(name: string, times: number): LockError {
  return new LockError(
    `Lock "${name}": its lease ended before Redis's reply arrived${times > 1 ? `, ${times} times in a row` : ''}; use a longer leaseMs (or a faster network)`,
    { lockName: name, code: 'ERR_LOCK_LEASE_TOO_SHORT' },
  );
}
