// The fair lock's acquire frame: closed and abort checks, waitMs, and the pending set that close()
// aborts, around a wait the fair lock drives itself. (runtime/acquire.ts's frame runs an
// attempt-sleep loop in which every waiter retries on its own; a fair waiter joins a queue once,
// is handed grants, is kept alive by its client's heartbeat, and must run `leave` when it gives up.)
import pTimeout from 'p-timeout';
import { LockError, LockTimeoutError } from '../errors.ts';
import type { Runtime } from '../runtime/runtime.ts';

/** What a wait has seen, for the error it ends with. */
export interface WaitState {
  /** The last connection failure, while a finite wait rides it out. */
  unreachable: LockError | undefined;
}

const noop = () => undefined;

/**
 * How long a rejected acquire waits, while Redis is reachable, for its wait to wind down (its
 * `leave` answered), so that once acquire() has rejected the waiter is out of the queue and any
 * grant it got meanwhile has been handed on. Never waited for while the connection is down.
 */
const SETTLE_MS = 250;

/** Resolves when `promise` settles or `ms` have passed, whichever comes first. */
export function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise.then(noop, noop), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms).unref()))]).finally(() => clearTimeout(timer));
}

/** One 'abort' listener per signal, however many waits share it (no MaxListenersExceededWarning). */
const fanouts = new WeakMap<AbortSignal, Set<() => void>>();

function onAbort(signal: AbortSignal, fn: () => void): () => void {
  let listeners = fanouts.get(signal);
  if (!listeners) {
    const created = new Set<() => void>();
    signal.addEventListener(
      'abort',
      () => {
        fanouts.delete(signal);
        for (const listener of created) listener();
      },
      { once: true },
    );
    fanouts.set(signal, (listeners = created));
  }
  listeners.add(fn);
  const own = listeners;
  return () => void own.delete(fn);
}

/** The promise, or a rejection with the signal's reason as soon as it aborts. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}

export interface FrameRequest<T> {
  readonly name: string;
  readonly waitMs: number;
  readonly signal: AbortSignal | undefined;
  /** The wait itself; it ends when `stop` aborts. */
  wait(stop: AbortSignal, state: WaitState): Promise<T>;
  /** Gives back what the wait brought after the caller stopped waiting. */
  giveBack(value: T): void;
}

export async function frame<T>(runtime: Runtime, request: FrameRequest<T>): Promise<T> {
  const { closed, pending } = runtime;
  if (closed.aborted) throw closed.reason;
  request.signal?.throwIfAborted();
  runtime.firstUse();
  const stop = new AbortController();
  const signal = request.signal;
  const unlisten = signal ? onAbort(signal, () => stop.abort(signal.reason)) : undefined;
  pending.add(stop);
  const state: WaitState = { unreachable: undefined };
  const waiting = request.wait(stop.signal, state);
  try {
    if (request.waitMs === 0 || request.waitMs === Number.POSITIVE_INFINITY) return await untilAborted(waiting, stop.signal);
    return await pTimeout(waiting, {
      milliseconds: request.waitMs,
      fallback: () => {
        throw timeoutError(request, state);
      },
      signal: stop.signal,
    });
  } catch (error) {
    stop.abort(error);
    waiting.then((value) => request.giveBack(value), noop);
    if (runtime.runner.ready) await settledWithin(waiting, SETTLE_MS);
    throw error;
  } finally {
    pending.delete(stop);
    unlisten?.();
  }
}

function timeoutError(request: FrameRequest<unknown>, state: WaitState): LockError {
  const { name, waitMs } = request;
  if (state.unreachable) {
    const cause = state.unreachable.cause as Error;
    return new LockError(`Lock "${name}" was not acquired within ${waitMs} ms: Redis could not be reached (${cause.message})`, {
      cause,
      lockName: name,
      code: 'ERR_LOCK_UNREACHABLE',
    });
  }
  return new LockTimeoutError(`Lock "${name}" was not acquired within ${waitMs} ms: it is held`, { lockName: name });
}
