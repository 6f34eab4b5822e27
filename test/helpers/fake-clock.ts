// A Clock (src/runtime/waiter.ts) that only moves when a test says so: advance(ms) fires the timers
// that fall due, in order of their due time (then of their creation), each at its own time.
import type { Clock } from '../../src/runtime/waiter.ts';

interface Timer {
  readonly id: number;
  readonly at: number;
  readonly fn: () => void;
}

export class FakeClock implements Clock {
  #now: number;
  #ids = 0;
  readonly #timers = new Map<number, Timer>();
  /** Every delay passed to setTimeout, in order (what a real timer would have been asked for). */
  readonly delays: number[] = [];
  /** How late every timer fires after its delay, as on a busy event loop (default 0: on time). */
  lateMs = 0;

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.#ids;
    this.delays.push(ms);
    this.#timers.set(id, { id, at: this.#now + Math.max(0, ms) + this.lateMs, fn });
    return id;
  }

  clearTimeout(timer: unknown): void {
    if (typeof timer === 'number') this.#timers.delete(timer);
  }

  /** How many timers are armed. */
  get pending(): number {
    return this.#timers.size;
  }

  /** When the next timer falls due, if any is armed. */
  nextAt(): number | undefined {
    return this.#next(Number.POSITIVE_INFINITY)?.at;
  }

  /** Moves time on by `ms`, firing every timer due by then (also those armed by a timer it fires). */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (let timer = this.#next(target); timer; timer = this.#next(target)) {
      this.#timers.delete(timer.id);
      this.#now = timer.at;
      timer.fn();
    }
    this.#now = target;
  }

  /** As advance(), but lets promises settle after each timer and at the end (for async code behind timers). */
  async advanceAsync(ms: number): Promise<void> {
    const target = this.#now + ms;
    for (let timer = this.#next(target); timer; timer = this.#next(target)) {
      this.#timers.delete(timer.id);
      this.#now = timer.at;
      timer.fn();
      await flush();
    }
    this.#now = target;
    await flush();
  }

  /** Sets the time without firing anything: a timer that fires late (an event loop blocked). */
  jump(ms: number): void {
    this.#now += ms;
  }

  #next(by: number): Timer | undefined {
    let next: Timer | undefined;
    for (const timer of this.#timers.values()) if (timer.at <= by && (!next || timer.at < next.at)) next = timer;
    return next;
  }
}

/** Lets every pending promise reaction run (a macrotask turn). */
export function flush(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
