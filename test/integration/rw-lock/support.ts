// What the read-write lock suites share: a checker of hold intervals that can fail, and waits.
import * as assert from 'uvu/assert';

/** One hold as its holder saw it: when it began and ended (performance.now() of this process). */
export interface Interval {
  readonly side: 'read' | 'write';
  readonly from: number;
  readonly to: number;
}

/** The pairs of holds that overlapped although one of them was a write hold. */
export function conflicts(intervals: readonly Interval[]): [Interval, Interval][] {
  const found: [Interval, Interval][] = [];
  const sorted = [...intervals].sort((a, b) => a.from - b.from);
  for (let i = 0; i < sorted.length; i++) {
    for (let j = i + 1; j < sorted.length && sorted[j]!.from < sorted[i]!.to; j++) {
      if (sorted[i]!.side === 'write' || sorted[j]!.side === 'write') found.push([sorted[i]!, sorted[j]!]);
    }
  }
  return found;
}

/** How many read holds overlapped another read hold: proof that readers did share. */
export function sharedReads(intervals: readonly Interval[]): number {
  const reads = intervals.filter((i) => i.side === 'read').sort((a, b) => a.from - b.from);
  let shared = 0;
  for (let i = 1; i < reads.length; i++) if (reads[i]!.from < reads[i - 1]!.to) shared++;
  return shared;
}

/** Records each hold of `fn` (entered after the acquire resolved, left before the release is sent). */
export class Recorder {
  readonly intervals: Interval[] = [];

  async hold(side: Interval['side'], ms: number): Promise<void> {
    const from = performance.now();
    await new Promise((resolve) => setTimeout(resolve, ms));
    this.intervals.push({ side, from, to: performance.now() });
  }

  assertSafe(): void {
    const bad = conflicts(this.intervals);
    assert.is(bad.length, 0, `a write hold overlapped another hold: ${JSON.stringify(bad.slice(0, 3))}`);
  }
}
