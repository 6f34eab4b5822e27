// The fair lock's timings. Every client of one lock name must use the same ones: whichever client
// runs a script passes them as ARGV (the claim, the queue deadline, the queue keys' lifetime).

export interface FairSettings {
  /** How long a grant holds the lock before its waiter confirms it to the full lease (C). */
  readonly claimMs: number;
  /** How often a client heartbeats its waiters on a lock (H). */
  readonly heartbeatMs: number;
  /** How long a queue entry lives past its client's last heartbeat (D). */
  readonly deadlineMs: number;
  /**
   * Lifetime of the queue keys, renewed by every heartbeat and by a join that finds less than D left:
   * they outlive every entry's deadline, and their waiters by at most this much.
   */
  readonly queueTtlMs: number;
  /** A grant with less claim than this provably left is confirmed before it is trusted. */
  readonly minClaimLeftMs: number;
  /** Owners per heartbeat script call. */
  readonly heartbeatBatch: number;
  /** How long a client stays subscribed to its grant channel after its last waiter left: the next joins without a try and a SUBSCRIBE. */
  readonly keepListeningMs: number;
}

/**
 * The defaults behind the documented bounds (docs/fair-lock.md): an aborted waiter lets the next in
 * at once; a dead waiter is skipped at once; a hung one stalls the queue at most D + C + H = 1.7 s.
 */
export const FAIR_SETTINGS: FairSettings = Object.freeze({
  claimMs: 500,
  heartbeatMs: 200,
  deadlineMs: 1_000,
  queueTtlMs: 2_000,
  minClaimLeftMs: 100,
  heartbeatBatch: 500,
  keepListeningMs: 2_000,
});
