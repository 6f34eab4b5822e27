// One waiting acquire: sleeps until woken, until its hint passes, or until it is stopped.
import { MAX_TIMER_MS } from '../validate.ts';

/** The clock and timers a waiter uses; tests inject their own. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(timer: unknown): void;
}

export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout),
};

/**
 * One acquire that is waiting; `need` is what it waits for (1 for a lock, n permits for a semaphore).
 * `handsOnWakeUps`: several waiters can hold at once (a semaphore's permits), so every wake-up
 * counts, and one it got but will not use is handed on when it leaves the queue (see `unused`).
 */
export class Waiter {
  readonly need: number;
  readonly #clock: Clock;
  readonly #handsOnWakeUps: boolean;
  #wake: (() => void) | undefined;
  /** Moves the current sleep's timer earlier; set while asleep. */
  #shorten: ((ms: number) => void) | undefined;
  /**
   * Wake-ups that arrived while this waiter was not asleep (it was attempting): each makes a later
   * sleep return at once. At most one unless it hands wake-ups on.
   */
  #pending = 0;

  constructor(need = 1, clock: Clock = systemClock, handsOnWakeUps = false) {
    this.need = need;
    this.#clock = clock;
    this.#handsOnWakeUps = handsOnWakeUps;
  }

  /**
   * Sleeps until woken or until `ms` pass (capped at what a timer holds: a longer one would fire at
   * once and spin); rejects with `stop.reason` when `stop` aborts.
   */
  sleep(ms: number, stop: AbortSignal): Promise<void> {
    if (stop.aborted) return Promise.reject(stop.reason);
    if (this.#pending > 0) {
      this.#pending--;
      return Promise.resolve();
    }
    const clock = this.#clock;
    return new Promise<void>((resolve, reject) => {
      let timer: unknown;
      let wakeAt = clock.now() + ms;
      const done = () => {
        clock.clearTimeout(timer);
        stop.removeEventListener('abort', onAbort);
        this.#wake = undefined;
        this.#shorten = undefined;
      };
      const onAbort = () => {
        done();
        reject(stop.reason);
      };
      const arm = (delay: number) => {
        timer = clock.setTimeout(() => {
          done();
          resolve();
        }, Math.min(delay, MAX_TIMER_MS));
      };
      arm(ms);
      this.#wake = () => {
        done();
        resolve();
      };
      this.#shorten = (shorter) => {
        if (clock.now() + shorter >= wakeAt) return;
        wakeAt = clock.now() + shorter;
        clock.clearTimeout(timer);
        arm(shorter);
      };
      if (stop.aborted) onAbort();
      else stop.addEventListener('abort', onAbort, { once: true });
    });
  }

  wake(): void {
    if (this.#wake) this.#wake();
    else this.#pending = this.#handsOnWakeUps ? this.#pending + 1 : 1;
  }

  /**
   * How many wake-ups this waiter got and will not use, now that it leaves the queue: those that
   * came while it was attempting (it acquired with the attempt it had out, which an earlier wake-up
   * began, or its wait ended) and, when it leaves awake without the lock, the one it was trying on.
   * Each may stand for permits that came free for another waiter. Always 0 unless it hands wake-ups on.
   */
  unused(acquired: boolean): number {
    if (!this.#handsOnWakeUps) return 0;
    return this.#pending + (acquired || this.#wake ? 0 : 1);
  }

  /** Wakes by `ms` from now at the latest, if asleep. */
  shorten(ms: number): void {
    this.#shorten?.(ms);
  }
}
