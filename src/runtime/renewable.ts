// What the watchdog renews: a primitive's renewer (one script call per batch), the holds it renews,
// and how long before its lease ends on Redis a hold is given up (the margin).
import type { LockLostError } from '../errors.ts';

/** Renews one primitive's holds: one script call per batch. */
export interface Renewer {
  /** One flag per hold, in order: true where the hold was still there and got a new lease. */
  renew(batch: readonly Renewable[], leaseMs: number): Promise<boolean[]>;
  /** Holds per call at most (on a Cluster the watchdog also splits batches by slot). */
  readonly batch: number;
  /**
   * An allowance, in milliseconds, to give up a lease earlier than `marginMs` would, when the renewer
   * needs more (Redlock's clock drift: 1 % of the lease + 2 ms). Absent: `marginMs` alone.
   */
  readonly allowanceMs?: (leaseMs: number) => number;
}

/**
 * What the watchdog needs of a hold: it reads these and never writes them (a hold's state has one
 * writer, hold.ts); what it decides itself (the deadline, whether it still renews) is its own record.
 */
export interface Renewable {
  readonly name: string;
  /** The key that force-unlocking ends (loseKey). */
  readonly key: string;
  readonly owner: string;
  readonly renewer: Renewer;
  /** Taken for the watchdog to renew (true) or on a fixed lease that only ends (false). */
  readonly renewable: boolean;
  /** The lease each renewal gives it, when not the client's (a leader's own `leaseMs`). */
  readonly renewLeaseMs?: number | undefined;
  /** Whether the acquire went through; a renewal that finds nothing before that is no loss. */
  readonly held: boolean;
  /** clock.now() when the acquire that took it was sent. */
  readonly acquiredAt: number;
  /** The hold is lost (not held any more); signals it once. */
  lose(error: LockLostError): void;
}

/**
 * How long before the lease ends on Redis the local side gives it up: a tenth, at least 3 ms (a Node
 * timer fires up to a millisecond late, its delay counted in whole milliseconds), at most a second.
 */
export function marginMs(leaseMs: number): number {
  return Math.min(1000, Math.max(3, Math.floor(leaseMs / 10)));
}

/** The margin of one hold: marginMs, or its renewer's larger allowance. */
export function holdMarginMs(hold: Renewable, leaseMs: number): number {
  const margin = marginMs(leaseMs);
  return hold.renewer.allowanceMs ? Math.max(margin, hold.renewer.allowanceMs(leaseMs)) : margin;
}
