// Small pieces every wait uses: backoff while Redis is unreachable, one 'abort' listener per shared
// signal, a promise raced with a signal, and a bounded wait for a promise to settle.

/** Retries after a connection failure, while a finite wait lasts: 100, 200, 400 ... 1000 ms. */
export const backoffMs = (failures: number) => Math.min(1_000, 100 * 2 ** Math.min(failures, 4));

/**
 * How long a wait that ended without the lock (or a release) waits, while Redis is reachable, for
 * what it sent to wind down (a queue's `leave`, a give-back, a gate's release): never longer, so a
 * server that does not answer holds nobody up.
 */
export const LEAVE_WAIT_MS = 250;

/** Does nothing: a handler for what nobody waits for any more. */
export const noop = () => undefined;

/** Resolves when `promise` settles or `ms` have passed, whichever comes first. */
export function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms).unref()));
  return Promise.race([promise.then(noop, noop), bound]).finally(() => clearTimeout(timer));
}

/** One 'abort' listener per signal, however many waits share it (no MaxListenersExceededWarning). */
const fanouts = new WeakMap<AbortSignal, Set<() => void>>();

export function onAbort(signal: AbortSignal, fn: () => void): () => void {
  let listeners = fanouts.get(signal);
  if (!listeners) {
    const created = new Set<() => void>();
    const fire = () => {
      fanouts.delete(signal);
      for (const listener of created) listener();
    };
    signal.addEventListener('abort', fire, { once: true });
    fanouts.set(signal, (listeners = created));
  }
  listeners.add(fn);
  const own = listeners;
  return () => void own.delete(fn);
}

/** The promise, or a rejection with the signal's reason as soon as it aborts. */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}
