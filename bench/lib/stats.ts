// Percentiles, medians, and what the critical sections of all processes say together.
import type { Interval } from './protocol.ts';

/** The p-th percentile (0..100) by nearest rank; NaN for no samples. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function median(values: readonly number[]): number {
  const finite = values.filter((value) => Number.isFinite(value));
  if (finite.length === 0) return Number.NaN;
  const sorted = [...finite].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function byName(intervals: readonly Interval[]): Map<string, Interval[]> {
  const groups = new Map<string, Interval[]>();
  for (const interval of intervals) {
    const group = groups.get(interval[2]);
    if (group) group.push(interval);
    else groups.set(interval[2], [interval]);
  }
  for (const group of groups.values()) group.sort((a, b) => a[0] - b[0]);
  return groups;
}

/**
 * Critical sections of one lock that began before an earlier one had ended. Each section is
 * recorded strictly inside the time Redis held the lock for it, so a correct lock has none.
 */
export function overlaps(intervals: readonly Interval[]): number {
  let count = 0;
  for (const group of byName(intervals).values()) {
    let lastExit = Number.NEGATIVE_INFINITY;
    for (const [enter, exit] of group) {
      if (enter < lastExit) count++;
      lastExit = Math.max(lastExit, exit);
    }
  }
  return count;
}

/** Hand-off gaps: from one holder leaving its critical section to the next one entering, per lock. */
export function handOffs(intervals: readonly Interval[]): number[] {
  const gaps: number[] = [];
  for (const group of byName(intervals).values()) {
    for (let i = 1; i < group.length; i++) gaps.push(group[i]![0] - group[i - 1]![1]);
  }
  return gaps;
}

/** Time inside critical sections over [from, to], as a share of that window. */
export function utilisation(intervals: readonly Interval[], from: number, to: number): number {
  let held = 0;
  for (const [enter, exit] of intervals) held += Math.max(0, Math.min(exit, to) - Math.max(enter, from));
  return held / (to - from);
}

/**
 * Like utilisation, but each hold lasts until its release resolved: the lock is still held on Redis
 * while the release travels to it. Holds that then overlap are merged, so this never exceeds 1.
 */
export function utilisationToRelease(intervals: readonly Interval[], from: number, to: number): number {
  const spans = intervals
    .map(([enter, exit, , released]) => [Math.max(enter, from), Math.min(released ?? exit, to)] as const)
    .filter(([start, end]) => end > start)
    .sort((a, b) => a[0] - b[0]);
  let held = 0;
  let start = Number.NEGATIVE_INFINITY;
  let end = Number.NEGATIVE_INFINITY;
  for (const [s, e] of spans) {
    if (s > end) {
      if (end > start) held += end - start;
      start = s;
      end = e;
    } else end = Math.max(end, e);
  }
  if (end > start) held += end - start;
  return held / (to - from);
}

/** The acquisitions, per lock, that carry their call stamp, in the order of their calls. */
function byCall(intervals: readonly Interval[]): Interval[][] {
  return [...byName(intervals).values()].map((group) => group.filter((interval) => interval[4] !== undefined && interval[4] !== null).sort((a, b) => a[4]! - b[4]!));
}

/**
 * Share of acquisitions overtaken by a later caller: some other acquire of the same lock, called at
 * least `marginMs` later, entered before this one. Call and entry are stamped on the shared clock
 * (lib/clock.ts) in whichever process made them, so callers of every process are ordered together.
 * The margin keeps calls that were simultaneous within the stamps' reach out of the count.
 */
export function overtaken(intervals: readonly Interval[], marginMs = 1): number {
  let counted = 0;
  let passed = 0;
  for (const group of byCall(intervals)) {
    // earliest[k]: the earliest entry among the acquisitions called k-th or later.
    const earliest = new Array<number>(group.length + 1).fill(Number.POSITIVE_INFINITY);
    for (let k = group.length - 1; k >= 0; k--) earliest[k] = Math.min(group[k]![0], earliest[k + 1]!);
    for (const [enter, , , , called] of group) {
      // The first acquisition called at least marginMs after this one (binary search over calls).
      let low = 0;
      let high = group.length;
      while (low < high) {
        const middle = (low + high) >>> 1;
        if (group[middle]![4]! < called! + marginMs) low = middle + 1;
        else high = middle;
      }
      counted++;
      if (earliest[low]! < enter) passed++;
    }
  }
  return counted === 0 ? Number.NaN : passed / counted;
}

/**
 * Hand-offs to a caller already waiting: from one holder leaving its critical section (just before
 * it calls release) to the next holder entering, counted only where the next one had called acquire
 * before the previous left, so that no idle time between holders is counted as hand-off.
 */
export function waitedHandOffs(intervals: readonly Interval[]): number[] {
  const gaps: number[] = [];
  for (const group of byName(intervals).values()) {
    for (let i = 1; i < group.length; i++) {
      const called = group[i]![4];
      if (called !== undefined && called !== null && called <= group[i - 1]![1]) gaps.push(group[i]![0] - group[i - 1]![1]);
    }
  }
  return gaps;
}
