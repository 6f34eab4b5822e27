// The one tiny interface every library is measured through: acquire a named lock, waiting until it
// is held, then release it.

/** A held lock. */
export interface Held {
  release(): Promise<void>;
}

/** One client of a library: what a process of the application would create once. */
export interface LockAdapter {
  /** Resolves once the lock is held; never gives up (each library is set to wait until acquired). */
  acquire(name: string): Promise<Held>;
  /**
   * Only where the library re-enters a lock its caller holds: `rounds` nested acquire+release
   * pairs inside one held lock, returning each pair's duration in milliseconds.
   */
  reenter?(name: string, rounds: number): Promise<number[]>;
  close(): Promise<void>;
}

/** What a library is to the report: relock (and its variants), a peer, a floor, or relock before this change. */
export type Kind = 'relock' | 'peer' | 'floor' | 'baseline';

/** How a library waits for a held lock. */
export type Waiting = 'pub/sub' | 'polling';

/** What the orchestrator and the report know of a library, without loading it. */
export interface AdapterSpec {
  /** Short id used on the command line, in results and in charts. */
  readonly id: string;
  /** The npm package measured (undefined for relock itself and the floors). */
  readonly pkg: string | undefined;
  readonly waiting: Waiting;
  /** The Redis client it runs on: only ioredis commands can be traced (lib/trace.ts). */
  readonly client: 'ioredis' | 'node-redis' | 'glide';
  /**
   * Peers are compared with relock; floors are what a hand-written lock costs; a baseline is relock
   * itself before the change under review, built from an earlier commit (lib/baseline.ts).
   */
  readonly kind: Kind;
  /** The settings used, in words, for the report. */
  readonly settings: string;
  /** Only these scenarios (default: every one). */
  readonly scenarios?: readonly string[];
  /** The module, beside this file, whose `create(url)` makes a client: only a worker loads it. */
  readonly module: string;
}

/** What every adapter module exports. */
export type Create = (url: string) => Promise<LockAdapter>;

/** Every library holds its locks for 30 s at most: longer than any critical section here. */
export const LEASE_MS = 30_000;
/** The polling interval of the polling libraries and floor: their fastest sensible setting. */
export const RETRY_MS = 10;
