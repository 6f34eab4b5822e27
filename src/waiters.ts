// Per-channel FIFO queues of local waiters and the wake-up rule: a release wakes the head only.
import { MAX_TIMER_MS } from './options.ts';

/** One acquire that is waiting for a lock. */
export class Waiter {
  #wake: (() => void) | undefined;
  /** Moves the current sleep's timer earlier; set while asleep. */
  #shorten: ((ms: number) => void) | undefined;
  /** A wake-up arrived while this waiter was not asleep (it was attempting): honour it at the next sleep. */
  #pending = false;

  /**
   * Sleeps until woken or until `ms` pass (capped at what a timer holds: a longer one would fire at
   * once and spin); rejects with `stop.reason` when `stop` aborts.
   */
  sleep(ms: number, stop: AbortSignal): Promise<void> {
    if (this.#pending) {
      this.#pending = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      let timer: NodeJS.Timeout;
      let wakeAt = performance.now() + ms;
      const done = () => {
        clearTimeout(timer);
        stop.removeEventListener('abort', onAbort);
        this.#wake = undefined;
        this.#shorten = undefined;
      };
      const onAbort = () => {
        done();
        reject(stop.reason);
      };
      const arm = (delay: number) => {
        timer = setTimeout(() => {
          done();
          resolve();
        }, Math.min(delay, MAX_TIMER_MS));
        timer.unref();
      };
      arm(ms);
      this.#wake = () => {
        done();
        resolve();
      };
      this.#shorten = (shorter) => {
        if (performance.now() + shorter >= wakeAt) return;
        wakeAt = performance.now() + shorter;
        clearTimeout(timer);
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

export class WaitQueues {
  readonly #queues = new Map<string, Waiter[]>();

  isEmpty(channel: string): boolean {
    return !this.#queues.has(channel);
  }

  /** Adds a waiter at the tail; returns whether it is the head. */
  join(channel: string, waiter: Waiter): boolean {
    const queue = this.#queues.get(channel);
    if (queue) queue.push(waiter);
    else this.#queues.set(channel, [waiter]);
    return !queue;
  }

  /**
   * Removes a waiter. A head that leaves without the lock may have swallowed a wake-up meant for the
   * queue, so the next head is woken to try in its place. A head that leaves with the lock, for a
   * lease of `leaseMs`, bounds the next head's sleep by that lease: if the hold ends by expiry,
   * nothing is published.
   */
  leave(channel: string, waiter: Waiter, leaseMs?: number): void {
    const queue = this.#queues.get(channel);
    const index = queue?.indexOf(waiter) ?? -1;
    if (!queue || index < 0) return;
    queue.splice(index, 1);
    if (queue.length === 0) this.#queues.delete(channel);
    else if (index === 0 && leaseMs === undefined) queue[0]?.wake();
    else if (index === 0) queue[0]?.shorten(leaseMs!);
  }

  /** A release was published: the head of the queue tries again, the rest sleep on. */
  wakeHead(channel: string): void {
    this.#queues.get(channel)?.[0]?.wake();
  }

  /** Messages may have been lost (the subscriber reconnected): every waiter tries again. */
  wakeAll(): void {
    for (const queue of this.#queues.values()) for (const waiter of queue) waiter.wake();
  }

  /** How many waiters are queued, over all channels. */
  get size(): number {
    let size = 0;
    for (const queue of this.#queues.values()) size += queue.length;
    return size;
  }
}
