// The acquire frame every primitive shares: closed and abort checks, waitMs, the pending set that
// close() aborts, and the attempt-sleep loop over an attempt() the primitive supplies.
import pTimeout from 'p-timeout';
import type { LockError } from '../errors.ts';
import type { Runtime } from './runtime.ts';
import { isFiniteWait, isUnreachable, leaseTooShort, timedOut, timeoutError, type WaitState, type WaitWords } from './wait-errors.ts';
import { closedBeforeCall } from '../errors.ts';
import { Waiter } from './waiter.ts';
import type { RoomOptions, WakeRule } from './waiting.ts';
import { backoffMs, noop, onAbort, settledWithin, untilAborted } from './waits.ts';

export { backoffMs, LEAVE_WAIT_MS, noop, settledWithin } from './waits.ts';
export { isFiniteWait, isUnreachable, leaseTooShort, type WaitState, type WaitWords } from './wait-errors.ts';

/** What one attempt of a primitive gave. */
export type Attempt<T> =
  | { readonly kind: 'acquired'; readonly value: T }
  /** Someone else holds it: try again when woken, or after `retryMs` (the holder's lease) at the latest. */
  | { readonly kind: 'busy'; readonly retryMs: number }
  /** A fixed lease ended before the reply arrived: the hold was given back. */
  | { readonly kind: 'late' };

export interface AcquireRequest<T> {
  readonly name: string;
  readonly waitMs: number;
  readonly signal: AbortSignal | undefined;
  /** The channel its releases are published on, and whom a message there wakes. */
  readonly channel: string;
  readonly rule: WakeRule;
  /** What the waiter needs (permits); 1 for a lock. */
  readonly need: number;
  /**
   * Several waiters can hold at once (a semaphore): a wake-up that came while the waiter was
   * attempting, and that it did not use, is handed on to the next local waiter (see `Waiter`).
   * @default false
   */
  readonly handsOnWakeUps?: boolean;
  /** The key that tells whether this client itself holds the lock (the self-wait warning). */
  readonly key: string;
  /** The lease the acquired value holds: it bounds the next local waiter's sleep. */
  readonly leaseMs: number;
  attempt(): Promise<Attempt<T>>;
  /** Gives back a value nobody will own: the wait gave up while its attempt was out. */
  giveBack(value: T): void;
  /** How its errors say what did not happen, and why (a latch waits for no hold). @default LOCK_WORDS */
  readonly words?: WaitWords | undefined;
  /**
   * Who tries: 'head' (a waiter tries when it is the head of the local queue or woken; a caller
   * with local waiters queues behind them) or 'every' (every waiter tries before it sleeps, and a
   * caller tries first unless the channel is listened to: readers, each of whom Redis must count
   * among the waiting for the next read batch). @default 'head'
   */
  readonly tries?: 'head' | 'every';
  /** The room of its channel. @default { lingerMs: LISTEN_AFTER_MS }, wake-ups handed on */
  readonly room?: RoomOptions;
  /**
   * Whether a wait behind a hold of this very client is worth a warning (the `await using` trap).
   * False where callers of one process wait for each other by design (a leader's candidates). @default true
   */
  readonly warnsSelfWait?: boolean;
}


/** Leases that end before the reply this many times in a row fail the acquire (every kind). */
export const MAX_LATE = 3;
/**
 * How long a lock's channel stays subscribed after its last local waiter left: a hot lock's next
 * wait needs no SUBSCRIBE, no UNSUBSCRIBE and no second attempt (the mark tells whether a release
 * came between its first attempt and its entering the room).
 */
const LISTEN_AFTER_MS = 2_000;


/** The acquire of a lock that retries on its own: a lean first attempt, then the frame's attempt-sleep loop. */
export async function acquire<T>(runtime: Runtime, request: AcquireRequest<T>): Promise<T> {
  const { closed } = runtime;
  if (closed.aborted) throw closedBeforeCall(closed.reason, request.name);
  request.signal?.throwIfAborted();
  runtime.firstUse();
  const { waitMs, signal } = request;
  // The fast path: no signal, no timer, and (for a wait) no local waiter to queue behind. One attempt
  // needs no controller; close() still ends it through a cheap pending entry.
  if (signal === undefined && (waitMs === 0 || (waitMs === Number.POSITIVE_INFINITY && mayBarge(runtime, request)))) {
    const mark = runtime.waiting.mark(request.channel);
    const outcome = await firstAttempt(runtime, request);
    if (outcome.kind === 'acquired') return outcome.value;
    if (outcome.kind === 'late') return waitFrame(runtime, request, undefined, 1);
    if (waitMs === 0) throw timedOut(request, 0);
    return waitFrame(runtime, request, outcome.retryMs, 0, mark);
  }
  return waitFrame(runtime, request);
}

/** Whether a new caller tries before it queues: nobody local waits ('head'), nobody listens ('every'). */
function mayBarge(runtime: Runtime, request: AcquireRequest<unknown>): boolean {
  return request.tries === 'every' ? !runtime.waiting.listening(request.channel) : runtime.waiting.isEmpty(request.channel);
}

/** One attempt, ended by close() as a wait would be: what it takes after that is given back. */
function firstAttempt<T>(runtime: Runtime, request: AcquireRequest<T>): Promise<Attempt<T>> {
  return new Promise<Attempt<T>>((resolve, reject) => {
    let done = false;
    const entry = {
      abort(reason: unknown) {
        done = true;
        reject(reason);
      },
    };
    runtime.pending.add(entry);
    request.attempt().then(
      (outcome) => {
        runtime.pending.delete(entry);
        if (!done) resolve(outcome);
        else if (outcome.kind === 'acquired') request.giveBack(outcome.value);
      },
      (error: unknown) => {
        runtime.pending.delete(entry);
        reject(error);
      },
    );
  });
}

/** A wait the frame runs: it ends when `stop` aborts, and reports what it saw in `state`. */
export interface FrameRequest<T> {
  readonly name: string;
  readonly waitMs: number;
  readonly signal: AbortSignal | undefined;
  wait(stop: AbortSignal, state: WaitState): Promise<T>;
  /** Gives back what the wait brought after the caller stopped waiting. */
  giveBack(value: T): void;
  /**
   * How long a rejected acquire waits, while Redis is reachable, for its wait to wind down (a fair
   * waiter's `leave` answered); 0 for none.
   */
  readonly settleMs?: number;
  readonly words?: WaitWords | undefined;
}



/**
 * The whole frame, for every lock kind: one controller ends the wait (the caller's signal, close(),
 * or the timeout), and whatever the wait still brings after that is given back.
 */
export async function frame<T>(runtime: Runtime, request: FrameRequest<T>): Promise<T> {
  const { pending, closed } = runtime;
  // Also checked here: close() may have come between the fast path's attempt and the frame. That
  // acquire was pending when close() came: it gets close()'s AbortError (the callers checked for a
  // client closed before the call, ERR_LOCK_CLOSED).
  if (closed.aborted) throw closed.reason;
  request.signal?.throwIfAborted();
  runtime.firstUse();
  const stop = new AbortController();
  const signal = request.signal;
  const unlisten = signal ? onAbort(signal, () => stop.abort(signal.reason)) : undefined;
  pending.add(stop);
  const state: WaitState = { unreachable: undefined, inFlight: false, sentAt: 0 };
  const waiting = request.wait(stop.signal, state);
  /** The error the wait's timer ended it with, if it did. */
  let timerError: LockError | undefined;
  try {
    // waitMs 0 tries once: the attempt itself decides, there is no timer to race it; nor is there
    // one without a finite wait, where only the signals can end it.
    if (!isFiniteWait(request.waitMs)) return await untilAborted(waiting, stop.signal);
    return await pTimeout(waiting, {
      milliseconds: request.waitMs,
      fallback: () => {
        throw (timerError = timeoutError(runtime, request, state));
      },
      signal: stop.signal,
    });
  } catch (error) {
    const fromTimer = error === timerError;
    stop.abort(error);
    // Whatever the wait still brings is nobody's now: give it back.
    waiting.then((value) => request.giveBack(value), noop);
    if (runtime.joint && state.inFlight) {
      // Servers deciding together (Redlock): a rejection leaves nothing behind. An attempt still out
      // settles only after its undo (bounded by its validity: docs/redlock.md#when-an-operation-settles);
      // its outcome also names what each server did, which a timer that fired meanwhile cannot.
      await settledWithin(waiting, runtime.leaseMs);
      if (fromTimer && state.unreachable?.code === 'ERR_LOCK_NO_QUORUM') throw timeoutError(runtime, request, state);
    } else if (request.settleMs && runtime.runner.ready) await settledWithin(waiting, request.settleMs);
    throw error;
  } finally {
    pending.delete(stop);
    unlisten?.();
  }
}

/** The lock's wait in the frame: attempts and sleeps, after what the fast path found. */
function waitFrame<T>(runtime: Runtime, request: AcquireRequest<T>, firstHint?: number, lateBefore = 0, firstMark?: number): Promise<T> {
  return frame(runtime, {
    name: request.name,
    waitMs: request.waitMs,
    signal: request.signal,
    wait: (stop, state) => wait(runtime, request, stop, state, firstHint, lateBefore, firstMark),
    giveBack: request.giveBack,
    words: request.words,
  });
}


/** Try, then subscribe, queue, and sleep between tries, until acquired or stopped. */
async function wait<T>(
  runtime: Runtime,
  request: AcquireRequest<T>,
  stop: AbortSignal,
  state: WaitState,
  firstHint: number | undefined,
  lateBefore: number,
  firstMark: number | undefined,
): Promise<T> {
  const { waiting, watchdog } = runtime;
  const { channel, waitMs } = request;
  const finite = isFiniteWait(waitMs);
  const startedAt = watchdog.clock.now();
  let waiter: Waiter | undefined;
  let entered = false;
  let acquired = false;
  let late = lateBefore;
  let failures = 0;
  let hint = firstHint ?? runtime.leaseMs;
  // Barge only when no local waiter is queued for this lock (or when trying once); a first attempt
  // made by the fast path has told us the hint already.
  let tryNow = firstHint === undefined && (lateBefore > 0 || waitMs === 0 || mayBarge(runtime, request));
  const every = request.tries === 'every';
  /** Taken before the last attempt: whether a release may have gone unheard since. */
  let mark = firstMark;
  /** Whether this wait has made an attempt (the fast path's counts). */
  let tried = firstHint !== undefined || lateBefore > 0;
  // A wait that ends leaves the queue at once, not when an attempt still out is answered: the
  // next local waiter becomes the head, and client.waiting counts it no more.
  const leaveNow = () => {
    if (!entered) return;
    entered = false;
    waiting.leave(channel, waiter!);
  };
  stop.addEventListener('abort', leaveNow, { once: true });
  try {
    for (;;) {
      if (tryNow) {
        // Never an attempt for a wait that ended (a wake-up may have been pending when it did).
        stop.throwIfAborted();
        mark = waiting.mark(channel);
        tried = true;
        let outcome: Attempt<T>;
        state.inFlight = true;
        state.sentAt = watchdog.clock.now();
        try {
          outcome = await request.attempt();
          failures = 0;
          state.unreachable = undefined;
        } catch (error) {
          // A finite wait rides out a connection failure until it ends; the others fail fast.
          if (!finite || !isUnreachable(error)) throw error;
          state.unreachable = error;
          outcome = { kind: 'busy', retryMs: backoffMs(failures++) };
        } finally {
          state.inFlight = false;
        }
        if (outcome.kind === 'acquired') {
          acquired = true;
          return outcome.value;
        }
        if (outcome.kind === 'late') {
          if (++late >= MAX_LATE) throw leaseTooShort(request.name, late);
          continue;
        }
        late = 0;
        if (waitMs === 0) throw timedOut(request, 0);
        hint = outcome.retryMs;
      }
      if (!entered) {
        waiter ??= new Waiter(request.need, watchdog.clock, request.handsOnWakeUps);
        try {
          tryNow = (await waiting.enter(channel, waiter, request.rule, request.name, request.room ?? { lingerMs: LISTEN_AFTER_MS }, mark)) || every;
          entered = true;
          // Queued behind others after a try of its own: a message since that try (any, when nobody
          // listened then) woke only the waiters queued at the time, yet it may have freed permits
          // for this one too.
          if (request.handsOnWakeUps && tried && (mark === undefined || waiting.mark(channel) !== mark)) tryNow = true;
        } catch (error) {
          if (!finite || !isUnreachable(error)) throw error;
          state.unreachable = error;
          hint = backoffMs(failures++);
          tryNow = true;
        }
        stop.throwIfAborted();
        // The head tries at once: a release may have slipped between the first try and SUBSCRIBE.
        if (entered && tryNow) continue;
      }
      // The `await using` trap: a hold of this very client, taken before this wait began, has not been
      // let go for a whole lease: the waiter is most likely the holder's own code.
      if (request.warnsSelfWait !== false && watchdog.clock.now() - startedAt > runtime.leaseMs && watchdog.heldSince(request.key, startedAt)) runtime.warnSelfWait(request.name);
      await waiter!.sleep(hint, stop);
      tryNow = true;
    }
  } finally {
    stop.removeEventListener('abort', leaveNow);
    if (entered) waiting.leave(channel, waiter!, acquired ? request.leaseMs : undefined);
  }
}

