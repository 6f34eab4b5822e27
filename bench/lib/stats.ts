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
