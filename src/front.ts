// The public front every kind that hands out leases shares: acquire(), tryAcquire() and
// runExclusive() over the kind's own take(). Arguments are checked before any I/O (a bad one
// rejects without a trace), each call is traced, and tryAcquire() turns a timeout into null.
import { traceAcquire, type AcquireTraceContext, type ClientTraits, type LockKind } from './diagnostics.ts';
import { LockTimeoutError } from './errors.ts';
import { runExclusive, type ExclusiveLease } from './lease.ts';
import { checkFunction, checkMs, checkOptions, checkSignal, checkWaitMs, MIN_FIXED_LEASE_MS } from './validate.ts';

/** One take's checked arguments: how long to wait, a fixed lease (or the watchdog's), the caller's signal. */
export interface Taking {
  readonly waitMs: number;
  readonly leaseMs: number | undefined;
  readonly signal: AbortSignal | undefined;
  /** The acquire's tracing context, when someone listens. */
  readonly trace?: AcquireTraceContext | undefined;
}

/** A lease whose hold can be bounded (maxHoldMs): LeaseImpl and a multi-lock's lease. */
interface Bounded {
  holdAtMost?(maxHoldMs: number): void;
}

/** Who takes: the traced name, kind and client, and how. `E` is what a kind checks of its own options. */
export interface Taker<L extends { readonly fencingToken: number }, E> {
  readonly name: string;
  readonly kind: LockKind;
  readonly clientId: string;
  /** The client's `maxHoldMs`, for an acquire that sets none. */
  readonly maxHoldMs: number | undefined;
  /** The client's topology and layout, for the trace. */
  readonly traits: ClientTraits;
  /** The kind's own option names (a semaphore's `permits`). */
  readonly extra?: readonly string[];
  /** Checks the kind's own options, before any I/O. */
  readonly check: (options: Record<string, unknown>) => E;
  take(taking: Taking, extra: E): Promise<L>;
}

/** acquire(options): checked, then traced; a bad argument rejects before any I/O. */
export function frontAcquire<L extends { readonly fencingToken: number }, E>(taker: Taker<L, E>, options: unknown): Promise<L> {
  try {
    const o = checkOptions('acquire()', options, ['waitMs', 'leaseMs', 'maxHoldMs', 'signal', ...(taker.extra ?? [])]);
    const waitMs = checkWaitMs(o.waitMs);
    const leaseMs = checkMs('leaseMs', o.leaseMs, MIN_FIXED_LEASE_MS);
    const maxHoldMs = checkMs('maxHoldMs', o.maxHoldMs, MIN_FIXED_LEASE_MS) ?? taker.maxHoldMs;
    const signal = checkSignal(o.signal);
    const extra = taker.check(o);
    return traceAcquire(taker, false, (trace) => bounded(taker.take({ waitMs, leaseMs, signal, trace }, extra), maxHoldMs));
  } catch (error) {
    return Promise.reject(error);
  }
}

/** tryAcquire(options): one attempt, null when it is held. */
export async function frontTryAcquire<L extends { readonly fencingToken: number }, E>(taker: Taker<L, E>, options: unknown): Promise<L | null> {
  const o = checkOptions('tryAcquire()', options, ['leaseMs', 'maxHoldMs', ...(taker.extra ?? [])]);
  const leaseMs = checkMs('leaseMs', o.leaseMs, MIN_FIXED_LEASE_MS);
  const maxHoldMs = checkMs('maxHoldMs', o.maxHoldMs, MIN_FIXED_LEASE_MS) ?? taker.maxHoldMs;
  const extra = taker.check(o);
  try {
    return await traceAcquire(taker, true, (trace) => bounded(taker.take({ waitMs: 0, leaseMs, signal: undefined, trace }, extra), maxHoldMs));
  } catch (error) {
    if (error instanceof LockTimeoutError) return null;
    throw error;
  }
}

/** The lease, its hold bounded to `maxHoldMs` when one is set; without one, `taking` itself (no extra await on every acquire). */
function bounded<L>(taking: Promise<L>, maxHoldMs: number | undefined): Promise<L> {
  if (maxHoldMs === undefined) return taking;
  return taking.then((lease) => {
    (lease as Bounded).holdAtMost?.(maxHoldMs);
    return lease;
  });
}

/** runExclusive(fn, options): `fn` under a lease in its own context, released however it ends. */
export async function frontRunExclusive<T, L extends ExclusiveLease>(acquire: () => Promise<L>, fn: (lease: L) => T | Promise<T>): Promise<T> {
  checkFunction('fn', fn);
  return runExclusive(await acquire(), fn);
}
