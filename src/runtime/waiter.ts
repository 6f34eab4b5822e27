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

/** One acquire that is waiting; `need` is what it waits for (1 for a lock, n permits for a semaphore). */
export class Waiter {
  readonly need: number;
  readonly #clock: Clock;
  #wake: (() => void) | undefined;
  /** Moves the current sleep's timer earlier; set while asleep. */
  #shorten: ((ms: number) => void) | undefined;
  /** A wake-up arrived while this waiter was not asleep (it was attempting): honour it at the next sleep. */
  #pending = false;

  constructor(need = 1, clock: Clock = systemClock) {
    this.need = need;
    this.#clock = clock;
  }

  /**
   * Sleeps until woken or until `ms` pass (capped at what a timer holds: a longer one would fire at
   * once and spin); rejects with `stop.reason` when `stop` aborts.
   */
  sleep(ms: number, stop: AbortSignal): Promise<void> {
    if (stop.aborted) return Promise.reject(stop.reason);
    if (this.#pending) {
      this.#pending = false;
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
    else this.#pending = true;
  }

  /** Wakes by `ms` from now at the latest, if asleep. */
  shorten(ms: number): void {
    this.#shorten?.(ms);
  }
}
