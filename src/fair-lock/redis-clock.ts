// Bounds Redis TIME from the local monotonic clock, from this client's own script round trips: a
// script that reported Redis TIME T ran after it was sent at local time s, so at local time t
// Redis TIME is at most T + (t - s), plus a drift allowance. No wall clock of the client is used.
// Each Redis server has its own clock, so there is one estimate per Cluster slot, fed only by the
// scripts run on that slot: whatever node serves the slot (after a failover too) is the one whose
// clock ends the claims of the locks in it.
import { keySlot } from '../runtime/slot.ts';

/** How far the two clocks may run apart: 500 ppm, more than NTP ever slews. */
const DRIFT = 5e-4;

interface Estimate {
  /** Redis TIME minus local time at the latest sample's send, an upper bound. */
  offset: number;
  sentAt: number;
}

export class RedisClock {
  /** Slot -> the estimate of the clock of the node that serves it (one slot on a single server's every key alike). */
  readonly #bySlot = new Map<number, Estimate>();

  /**
   * A script on `key` sent at local time `sentAt` reported Redis TIME `redisMs`. The latest one sent
   * wins, even when a looser bound: a step of the Redis clock since an older one would make that one
   * wrong.
   */
  sample(key: string, redisMs: number, sentAt: number): void {
    if (!Number.isFinite(redisMs)) return;
    const slot = keySlot(key);
    const estimate = this.#bySlot.get(slot);
    if (estimate && sentAt < estimate.sentAt) return;
    this.#bySlot.set(slot, { offset: redisMs - sentAt, sentAt });
  }

  /**
   * The latest Redis TIME (ms) it can be at local time `now` on the node that serves `key`; Infinity
   * before any sample from it.
   */
  latest(key: string, now: number): number {
    const estimate = this.#bySlot.get(keySlot(key));
    if (!estimate) return Number.POSITIVE_INFINITY;
    return now + estimate.offset + Math.max(0, now - estimate.sentAt) * DRIFT;
  }
}
