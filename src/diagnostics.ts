// Every node:diagnostics_channel relock publishes on, in one object. Each publication sits behind
// `hasSubscribers`, so nothing is built for a channel nobody listens to.
import { channel, tracingChannel, type TracingChannel } from 'node:diagnostics_channel';
import type { Lease } from './api.ts';

/** The kinds of lock a diagnostics message can be about. */
export type LockKind = 'lock' | 'fair-lock' | 'read-lock' | 'write-lock' | 'semaphore' | 'multi-lock' | 'leader';

/** Where a client's locks live: one server, a Cluster, or a Redlock quorum of independent masters. */
export type TopologyKind = 'single' | 'cluster' | 'redlock';

/** What every acquire's context tells of its client, made once per client (not per call). */
export interface ClientTraits {
  /** One server, a Cluster, or a Redlock quorum. */
  readonly topology: TopologyKind;
  /** The key layout: relock's own, or Redisson's. */
  readonly layout: 'relock' | 'redisson';
}

/**
 * The context object of `tracingChannel('relock:acquire')` and `tracingChannel('relock:release')`:
 * the same object reaches `start`, `asyncStart`/`asyncEnd` (with `result`) and `error` (with `error`).
 *
 * @example
 * ```ts
 * import { tracingChannel } from 'node:diagnostics_channel';
 * tracingChannel('relock:acquire').subscribe({
 *   start() {}, end() {}, asyncStart() {}, error() {},
 *   asyncEnd(ctx) { const c = ctx as AcquireTraceContext; console.log(c.name, c.waitedMs, c.fencingToken); },
 * });
 * ```
 */
export interface AcquireTraceContext {
  /** The lock's name (a multi-lock's joined name). */
  readonly name: string;
  /** Which kind of lock: `lock`, `fair-lock`, `read-lock`, `write-lock`, `semaphore`, `multi-lock`, or `leader` (a campaign; its lease is the term). */
  readonly kind: LockKind;
  /** The `LockClient#id` of the client that acquires or releases. */
  readonly clientId: string;
  /** An acquire's: the client's topology (`single`, `cluster`, `redlock`); not set on a release. */
  readonly topology?: TopologyKind;
  /** An acquire's: the client's key layout (`relock`, `redisson`); not set on a release. */
  readonly layout?: 'relock' | 'redisson';
  /**
   * Set (true) on the acquire of a `tryAcquire()`: its `ERR_LOCK_TIMEOUT` error is the lock found
   * busy, and the call resolves `null`.
   */
  readonly tryAcquire?: true;
  /** A release's: the lease being released (the `result` of its acquire). */
  readonly lease?: Lease;
  /** Set on success of an acquire: the lease's fencing token. */
  fencingToken?: number;
  /** Set on success of an acquire: milliseconds from the call to the lease. */
  waitedMs?: number;
  /**
   * Set by a fair lock's acquire that joined its queue (one server or a Cluster): the Redis server's
   * time of the join, in milliseconds since the epoch (its `TIME`); of the last join when the waiter
   * joined again (after a late reply or a grant it could not claim in time). The fair lock serves in
   * the order of these times; the gap to the call's own clock is the time the join took to get there.
   */
  queuedAt?: number;
}

/**
 * A message of `channel('relock:lost')`: a hold ended while held.
 *
 * @example
 * ```ts
 * diagnostics_channel.subscribe('relock:lost', (message) => metrics.lost.add(1, { name: (message as LostMessage).name }));
 * ```
 */
export interface LostMessage {
  /** The `LockClient#id` of the client whose hold was lost. */
  readonly clientId: string;
  /** The lock's name. */
  readonly name: string;
  /** Why: the `LockLostError` that `lease.signal` aborts with. */
  readonly error: Error;
  /** The lost hold's fencing token (`lease.fencingToken`): with the name and client, which hold it was. */
  readonly fencingToken: number;
}

/**
 * A message of `channel('relock:renew')`: one renewal batch went through.
 *
 * @example
 * ```ts
 * diagnostics_channel.subscribe('relock:renew', (message) => console.log((message as RenewMessage).names.length));
 * ```
 */
export interface RenewMessage {
  /** The `LockClient#id` of the client that renewed. */
  readonly clientId: string;
  /** The names of the holds this batch renewed. */
  readonly names: readonly string[];
}

/**
 * A message of `channel('relock:wake')`: a release message reached this client's waiters of a lock.
 *
 * @example
 * ```ts
 * diagnostics_channel.subscribe('relock:wake', (message) => console.log('woken on', (message as WakeMessage).name));
 * ```
 */
export interface WakeMessage {
  /** The `LockClient#id` of the client whose waiter was woken. */
  readonly clientId: string;
  /** The lock's name. */
  readonly name: string;
}

export const diagnostics = {
  acquire: tracingChannel<unknown, AcquireTraceContext & object>('relock:acquire'),
  release: tracingChannel<unknown, AcquireTraceContext & object>('relock:release'),
  lost: channel('relock:lost'),
  renew: channel('relock:renew'),
  wake: channel('relock:wake'),
};

/** Who acquires: a lock's name and kind, and its client's id and traits. */
export interface Acquirer {
  readonly name: string;
  readonly kind: LockKind;
  readonly clientId: string;
  readonly traits: ClientTraits;
}

/**
 * Whether a tracing channel has subscribers. Bun (1.4) has no `TracingChannel#hasSubscribers`
 * (undefined): there its five channels are asked one by one.
 */
function traced(tracing: TracingChannel<unknown, object>): boolean {
  const { hasSubscribers } = tracing as { hasSubscribers?: boolean };
  if (hasSubscribers !== undefined) return hasSubscribers;
  return [tracing.start, tracing.end, tracing.asyncStart, tracing.asyncEnd, tracing.error].some((part) => part.hasSubscribers);
}

/**
 * Traces an acquire when someone listens; sets `fencingToken` and `waitedMs` on the context on
 * success. `fn` gets the context (to set `queuedAt`), or undefined when nobody listens.
 */
export function traceAcquire<T extends { readonly fencingToken: number }>(
  who: Acquirer,
  tryAcquire: boolean,
  fn: (trace?: AcquireTraceContext) => Promise<T>,
): Promise<T> {
  if (!traced(diagnostics.acquire)) return fn();
  const { name, kind, clientId, traits } = who;
  const context: AcquireTraceContext = { name, kind, clientId, topology: traits.topology, layout: traits.layout, ...(tryAcquire && { tryAcquire: true }) };
  const startedAt = performance.now();
  return diagnostics.acquire.tracePromise(async () => {
    const lease = await fn(context);
    context.fencingToken = lease.fencingToken;
    context.waitedMs = performance.now() - startedAt;
    return lease;
  }, context);
}

/** Traces the release of `lease` when someone listens. */
export function traceRelease(lease: Lease, kind: LockKind, clientId: string, fn: () => Promise<void>): Promise<void> {
  if (!traced(diagnostics.release)) return fn();
  return diagnostics.release.tracePromise(fn, { name: lease.name, kind, clientId, lease });
}
