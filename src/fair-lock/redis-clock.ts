// Bounds Redis TIME from the local monotonic clock, from this client's own script round trips: a
// script that reported Redis TIME T ran after it was sent at local time s, so at local time t
// Redis TIME is at most T + (t - s), plus a drift allowance. No wall clock of the client is used.

/** How far the two clocks may run apart: 500 ppm, more than NTP ever slews. */
const DRIFT = 5e-4;

export class RedisClock {
  /** Redis TIME minus local time at the latest sample's send, an upper bound. */
  #offset = Number.POSITIVE_INFINITY;
  #sentAt = Number.NEGATIVE_INFINITY;

  /**
   * A script sent at local time `sentAt` reported Redis TIME `redisMs`. The latest one sent wins,
   * even when a looser bound: a step of the Redis clock since an older one would make that one wrong.
   */
  sample(redisMs: number, sentAt: number): void {
    if (!Number.isFinite(redisMs) || sentAt < this.#sentAt) return;
    this.#offset = redisMs - sentAt;
    this.#sentAt = sentAt;
  }

  /** The latest Redis TIME (ms) it can be at local time `now`; Infinity before any sample. */
  latest(now: number): number {
    return now + this.#offset + Math.max(0, now - this.#sentAt) * DRIFT;
  }
}
