// The lease of a multi-lock: its members' leases as one. Its signal aborts when any member is lost;
// its release frees every member, also after one of them was lost.
import type { Lease } from '../api.ts';
import { traceRelease } from '../diagnostics.ts';
import { LockError, LockLostError, LockNotHeldError } from '../errors.ts';
import { LeaseImpl } from '../lease.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { checkFunction } from '../validate.ts';

/**
 * The lease of a multi-lock: one `Lease` over a hold on every member.
 *
 * @example
 * ```ts
 * await using lease = await client.multiLock([client.lock('account:1'), client.lock('account:2')]).acquire();
 * const [from, to] = lease.members; // each member's own lease, for its own fencing token
 * await ledger.transfer(1, 2, 100, { fence: [from.fencingToken, to.fencingToken] });
 * ```
 */
export interface MultiLease extends Lease {
  /**
   * The members' own leases, in the order the locks were given to `multiLock()`: for a fencing token
   * per resource (each rises per member name). Read them; release the multi-lock's lease, not these.
   */
  readonly members: readonly Lease[];
}

/** The member lease's loss, if it was lost (checked against its local deadline for a LeaseImpl). */
export function lostOf(lease: Lease): LockLostError | undefined {
  if (lease instanceof LeaseImpl) return lease.lost;
  return lease.signal.aborted ? (lease.signal.reason as LockLostError) : undefined;
}

/** Gives a member lease back whatever happens, also after close() (its owner gave up on it). */
export async function giveBack(lease: Lease, closed: AbortSignal): Promise<void> {
  if (closed.aborted && lease instanceof LeaseImpl) return lease.giveBack();
  await lease.release().catch(() => undefined);
}

export class MultiLeaseImpl implements MultiLease {
  readonly name: string;
  readonly members: readonly Lease[];
  /** In acquisition order: run() nests their contexts in it. */
  readonly #sorted: readonly Lease[];
  readonly #runtime: Runtime;
  #signal: AbortSignal | undefined;
  #released = false;

  constructor(name: string, members: readonly Lease[], sorted: readonly Lease[], runtime: Runtime) {
    this.name = name;
    this.members = members;
    this.#sorted = sorted;
    this.#runtime = runtime;
  }

  /** The highest member token: each member's rises from holder to holder, so the highest does too. */
  get fencingToken(): number {
    return Math.max(...this.#sorted.map((lease) => lease.fencingToken));
  }

  /** 1 unless every member was re-entered: the fewest levels any member has in this context. */
  get holdCount(): number {
    return Math.min(...this.#sorted.map((lease) => lease.holdCount));
  }

  /** Bounds every member's hold to `maxHoldMs` (the multi-lock's acquire option). */
  holdAtMost(maxHoldMs: number): void {
    for (const lease of this.#sorted) (lease as { holdAtMost?(ms: number): void }).holdAtMost?.(maxHoldMs);
  }

  /** Aborts, with that member's LockLostError, when any member is lost. Made at the first read. */
  get signal(): AbortSignal {
    this.#signal ??= AbortSignal.any(this.#sorted.map((lease) => lease.signal));
    return this.#signal;
  }

  /** The first member's loss, if one was lost. */
  get lost(): LockLostError | undefined {
    for (const lease of this.#sorted) {
      const lost = lostOf(lease);
      if (lost) return lost;
    }
    return undefined;
  }

  get released(): boolean {
    return this.#released;
  }

  /**
   * Releases every member at once (one round trip), whatever the others do: a lost member does not
   * keep the others held. Rejects with LockNotHeldError when a member was no longer held, after the
   * others were released; with a member's other error (Redis unreachable) so that it can be retried.
   */
  release(): Promise<void> {
    const { closed, clientId } = this.#runtime;
    // Traced whatever rejects it, a refusal on local state included: a watcher sees every release() that fails.
    return traceRelease(this, 'multi-lock', clientId, async () => {
      if (this.#released) throw new LockNotHeldError(`This lease of multi-lock "${this.name}" was released already`, { lockName: this.name });
      if (closed.aborted) {
        throw new LockError(`The LockClient was closed: multi-lock "${this.name}" is no longer renewed and ends with its members' leases`, {
          lockName: this.name,
          code: 'ERR_LOCK_CLOSED',
        });
      }
      this.#released = true;
      // A member released by a retry of this very call is done already: asking again would find it gone.
      const pending = this.#sorted.filter((lease) => !(lease instanceof LeaseImpl && lease.released));
      const outcomes = await Promise.allSettled(pending.map((lease) => lease.release()));
      const failures = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason as unknown] : []));
      const other = failures.find((error) => !(error instanceof LockNotHeldError));
      if (other !== undefined) {
        this.#released = false;
        throw other;
      }
      if (failures.length > 0) {
        const names = pending.filter((_, i) => outcomes[i]!.status === 'rejected').map((lease) => `"${lease.name}"`);
        throw new LockNotHeldError(`Multi-lock "${this.name}": ${names.join(', ')} no longer held (expired, force-unlocked, or released); the other members were released`, {
          lockName: this.name,
          cause: failures[0],
        });
      }
    });
  }

  /** Runs `fn` in the context of every member's hold, so that locking any of them inside re-enters. */
  async run<T>(fn: () => T | Promise<T>): Promise<T> {
    checkFunction('fn', fn);
    const nest = (i: number): Promise<T> => (i === this.#sorted.length ? Promise.resolve().then(fn) : this.#sorted[i]!.run(() => nest(i + 1)));
    return nest(0);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (!this.#released && !this.#runtime.closed.aborted) await this.release();
  }
}
