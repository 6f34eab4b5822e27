// The Lease every primitive hands out, over a Hold: release one level (or the whole hold for the
// outermost lease), run code in its context, and `await using`.
import type { Lease } from './api.ts';
import { traceRelease, type LockKind } from './diagnostics.ts';
import { LockError, LockLostError, LockNotHeldError } from './errors.ts';
import type { Hold } from './runtime/hold.ts';
import { checkFunction } from './validate.ts';

/**
 * The outermost leases of watchdog-renewed holds, until released: one garbage-collected first was
 * abandoned, and its hold is renewed no more (Hold.abandon).
 */
const abandoned = new FinalizationRegistry<Hold>((hold) => hold.abandon());

export class LeaseImpl implements Lease {
  readonly holdCount: number;
  readonly #hold: Hold;
  readonly #kind: LockKind;
  readonly #clientId: string;
  readonly #closed: AbortSignal;
  #released = false;

  constructor(hold: Hold, holdCount: number, kind: LockKind, clientId: string, closed: AbortSignal) {
    this.#hold = hold;
    this.holdCount = holdCount;
    this.#kind = kind;
    this.#clientId = clientId;
    this.#closed = closed;
    if (holdCount === 1 && hold.renewable) abandoned.register(this, hold, this);
  }

  get name(): string {
    return this.#hold.name;
  }

  get fencingToken(): number {
    return this.#hold.token;
  }

  get signal(): AbortSignal {
    return this.#hold.signal;
  }

  /** Why the hold was lost, if it was (checked against the local deadline now), without making a signal. */
  get lost(): LockLostError | undefined {
    return this.#hold.check();
  }

  /** Whether release() went through (or is under way). */
  get released(): boolean {
    return this.#released;
  }

  /** Traced whatever rejects it, a refusal on local state included: a watcher sees every release() that fails. */
  release(): Promise<void> {
    return traceRelease(this, this.#kind, this.#clientId, () => this.#release());
  }

  /**
   * A job's end (src/job/): releases the hold, but the lock stays taken until `keepMs` after the
   * hold's start by Redis's clock (at once when that has passed). Only the lock on one server or a
   * Cluster carries this out; the job is refused elsewhere.
   */
  releaseKeeping(keepMs: number): Promise<void> {
    return traceRelease(this, this.#kind, this.#clientId, () => this.#release(keepMs));
  }

  async #release(keepMs?: number): Promise<void> {
    if (this.#released) throw new LockNotHeldError(`This lease of lock "${this.name}" was released already`, { lockName: this.name });
    if (this.#closed.aborted) {
      throw new LockError(`The LockClient was closed: lock "${this.name}" is no longer renewed and ends with its lease`, {
        lockName: this.name,
        code: 'ERR_LOCK_CLOSED',
      });
    }
    this.#released = true;
    abandoned.unregister(this);
    try {
      // The outermost lease gives back the whole hold, whatever nested releases did.
      await this.#hold.release(this.holdCount === 1, keepMs);
    } catch (error) {
      // A release that never reached Redis may be tried again.
      if (!(error instanceof LockNotHeldError)) this.#released = false;
      throw error;
    }
  }

  async run<T>(fn: () => T | Promise<T>): Promise<T> {
    checkFunction('fn', fn);
    return this.#hold.run(fn);
  }

  /**
   * Bounds the hold to `maxHoldMs`: from its acquisition for a first hold, from now for a nested one
   * (the earliest end of the two wins: they share the hold).
   */
  holdAtMost(maxHoldMs: number): void {
    this.#hold.endBy(maxHoldMs, this.holdCount > 1);
  }

  /**
   * Keeps the hold renewed even when this lease becomes unreachable (a leadership: a leader leads until
   * it resigns or its process ends, not until its object is collected).
   */
  keep(): this {
    abandoned.unregister(this);
    return this;
  }

  /** Gives the whole hold back, even after close(): its acquire gave up, so nobody owns it. Errors are swallowed. */
  giveBack(): void {
    this.#released = true;
    abandoned.unregister(this);
    this.#hold.giveBack().catch(() => undefined);
  }

  /** Releases unless released already, or the client was closed (its holds then end with their leases). */
  async [Symbol.asyncDispose](): Promise<void> {
    if (!this.#released && !this.#closed.aborted) await this.release();
  }
}

/** What runExclusive needs of a lease: a LeaseImpl, or a lease over several (a multi-lock's). */
export interface ExclusiveLease extends Lease {
  readonly released: boolean;
  readonly lost: LockLostError | undefined;
}

/**
 * Runs `fn` in the lease's context and releases it; shared by every lock kind. `end` gives the lease
 * back (a job's keeps the lock taken for its window).
 */
export async function runExclusive<T, L extends ExclusiveLease>(lease: L, fn: (lease: L) => T | Promise<T>, end: (lease: L) => Promise<void> = (held) => held.release()): Promise<T> {
  let result: T;
  try {
    result = await lease.run(() => fn(lease));
  } catch (error) {
    if (!lease.released) await end(lease).catch(() => undefined);
    throw error;
  }
  // fn released its own lease: nothing is left to release or to lose.
  if (lease.released) return result;
  const lost = lease.lost;
  if (lost) {
    await end(lease).catch(() => undefined);
    throw lost;
  }
  try {
    await end(lease);
  } catch (error) {
    // Gone by the time fn finished, unnoticed until now: the hold ended while fn ran.
    if (!(error instanceof LockNotHeldError)) throw error;
    throw new LockLostError(`Lock "${lease.name}" was lost while its callback ran`, { cause: error, lockName: lease.name });
  }
  return result;
}
