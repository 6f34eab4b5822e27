// The clock the fair-lock tests compare times on across processes (the test's and its children's).
//
// Milliseconds on CLOCK_MONOTONIC (process.hrtime), which every process of the machine shares, as
// the fault workers' clock (test/faults/protocol.ts). Not performance.timeOrigin +
// performance.now(): in Node 20 that sum runs ahead of Date.now() by a different amount in each
// process, more the slower the process started (measured 2-230 ms for node processes started
// together on a loaded 2-core machine): a child's "acquired at" could seem to come before the
// release that granted it, or a stall seem 100 ms longer than it was.
export function sharedNow(): number {
  return Number(process.hrtime.bigint() / 1000n) / 1000;
}
