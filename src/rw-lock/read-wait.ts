// A reader's wait: unlike a writer's (the runtime's acquire(), head of the local queue first),
// every waiting reader tries before it sleeps, so that Redis counts it among the waiting readers a
// write release admits ahead of writers; one message on the readers' channel wakes them all.
import type { LeaseImpl } from '../lease.ts';
import { LockTimeoutError } from '../errors.ts';
import { backoffMs, isUnreachable, leaseTooShort, MAX_LATE, type Attempt, type WaitState } from '../runtime/acquire.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { Waiter } from '../runtime/waiter.ts';
import { wakeAll } from '../runtime/waiting.ts';

/**
 * The readers' room: every reader was woken (no hand-on), and the channel stays subscribed a while
 * after the last reader left, so that the next wait finds it listening (no SUBSCRIBE, one try).
 */
const ROOM = { handsOn: false, lingerMs: 2_000 } as const;

export interface ReadWait {
  readonly runtime: Runtime;
  readonly name: string;
  /** The readers' channel. */
  readonly channel: string;
  /** The write side's scope key (the self-wait warning asks whether this client holds it). */
  readonly key: string;
  readonly waitMs: number;
  /** A first attempt was refused already (the fast path): listen first, then try. */
  readonly tried: boolean;
  attempt(): Promise<Attempt<LeaseImpl>>;
}

/** Tries, listens, sleeps until woken or the hint passes, and tries again, until acquired or stopped. */
export async function readWait(w: ReadWait, stop: AbortSignal, state: WaitState): Promise<LeaseImpl> {
  const { waiting, watchdog } = w.runtime;
  const finite = w.waitMs > 0 && w.waitMs !== Number.POSITIVE_INFINITY;
  const startedAt = watchdog.clock.now();
  const waiter = new Waiter(1, watchdog.clock);
  let entered = false;
  let late = 0;
  let failures = 0;
  /** One try, or what a failure to reach Redis makes of it while a finite wait lasts. */
  const attempt = async (): Promise<Attempt<LeaseImpl>> => {
    state.inFlight = true;
    state.sentAt = watchdog.clock.now();
    try {
      const outcome = await w.attempt();
      failures = 0;
      state.unreachable = undefined;
      return outcome;
    } catch (error) {
      // A finite wait rides out a connection failure until it ends; the others fail fast.
      if (!finite || !isUnreachable(error)) throw error;
      state.unreachable = error;
      return { kind: 'busy', retryMs: backoffMs(failures++) };
    } finally {
      state.inFlight = false;
    }
  };
  // A wait that ends leaves the room at once, not when an attempt still out is answered (as acquire()'s).
  const leaveNow = () => {
    if (!entered) return;
    entered = false;
    waiting.leave(w.channel, waiter);
  };
  stop.addEventListener('abort', leaveNow, { once: true });
  try {
    // Refused once already (the fast path): listen, then try again.
    let outcome: Attempt<LeaseImpl> | undefined = w.tried ? { kind: 'busy', retryMs: backoffMs(0) } : undefined;
    for (;;) {
      // Never an attempt for a wait that ended (a wake-up may have been pending when it did).
      stop.throwIfAborted();
      // Already subscribed (other readers of this client wait): queue before trying, so that a
      // wake-up during the try is remembered, and one try is enough.
      if (!entered && w.waitMs !== 0 && waiting.listening(w.channel)) {
        await waiting.enter(w.channel, waiter, wakeAll, w.name, ROOM);
        entered = true;
        outcome = undefined;
        stop.throwIfAborted();
      }
      outcome ??= await attempt();
      if (outcome.kind === 'acquired') return outcome.value;
      if (outcome.kind === 'late') {
        if (++late >= MAX_LATE) throw leaseTooShort(w.name, late);
        outcome = undefined;
        continue;
      }
      late = 0;
      if (w.waitMs === 0) throw new LockTimeoutError(`Lock "${w.name}" was not acquired within 0 ms: it is write-locked`, { lockName: w.name });
      let sleepMs = outcome.retryMs;
      outcome = undefined;
      if (!entered && !state.unreachable) {
        try {
          await waiting.enter(w.channel, waiter, wakeAll, w.name, ROOM);
          entered = true;
          // Listening now: try again at once, a release may have slipped between the try and SUBSCRIBE.
          continue;
        } catch (error) {
          if (!finite || !isUnreachable(error)) throw error;
          state.unreachable = error;
          sleepMs = backoffMs(failures++);
        }
      }
      // The `await using` trap: a write hold of this very client, held by its code but not its context.
      if (watchdog.clock.now() - startedAt > w.runtime.leaseMs && watchdog.heldSince(w.key, startedAt)) w.runtime.warnSelfWait(w.name);
      await waiter.sleep(sleepMs, stop);
    }
  } finally {
    stop.removeEventListener('abort', leaveNow);
    if (entered) waiting.leave(w.channel, waiter);
  }
}
