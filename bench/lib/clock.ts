// One clock for every process of a run: CLOCK_MONOTONIC is system-wide on Linux, so critical
// sections recorded in different workers can be laid side by side to find overlaps and hand-offs.

/** Milliseconds on the system-wide monotonic clock, with sub-microsecond resolution. */
export function now(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
