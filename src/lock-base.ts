// What every kind of Lock shares above its own way of taking a hold: argument checks before any I/O,
// re-entry, the front (front.ts: acquire, tryAcquire, runExclusive), and the reads and force-unlock
// by its keys.
import type { Lease, Lock } from './api.ts';
import type { AcquireTraceContext, LockKind } from './diagnostics.ts';
import { closedBeforeCall, LockLostError } from './errors.ts';
import { frontAcquire, frontRunExclusive, frontTryAcquire, type Taker } from './front.ts';
import { LeaseImpl } from './lease.ts';
import type { AcquireOptions, TryAcquireOptions } from './options.ts';
import type { Runtime } from './runtime/runtime.ts';

/** The reads and the force-unlock a lock kind's commands offer, by its keys. */
export interface LockReads<K> {
  isLocked(keys: K): Promise<boolean>;
  holdCount(keys: K, owner: string): Promise<number>;
  remainingTtlMs(keys: K): Promise<number | null>;
  forceRelease(keys: K): Promise<boolean>;
}

/** Who made a lock and which key it guards: a multi-lock checks and orders its members by it. */
export interface LockIdentity {
  readonly runtime: Runtime;
  /** The key that scopes its reentrancy (one per lock): one lock given twice has it twice. */
  readonly key: string;
  /** Its name as made: with the kind, the multi-lock's order (a name may contain anything, so never the key). */
  readonly name: string;
  readonly kind: LockKind;
}

const identities = new WeakMap<object, LockIdentity>();

/** The identity of a lock made by a LockClient's factory, or undefined for anything else. */
export function lockIdentity(lock: unknown): LockIdentity | undefined {
  return typeof lock === 'object' && lock !== null ? identities.get(lock) : undefined;
}

export abstract class LockBase<K extends { readonly lock: string }> implements Lock {
  readonly name: string;
  readonly #runtime: Runtime;
  readonly #kind: LockKind;
  readonly #keys: K;
  readonly #reads: LockReads<K>;
  #taker: Taker<Lease, undefined>;

  constructor(runtime: Runtime, kind: LockKind, name: string, keys: K, reads: LockReads<K>) {
    this.name = name;
    this.#runtime = runtime;
    this.#kind = kind;
    this.#keys = keys;
    this.#reads = reads;
    this.#taker = { name, kind, clientId: runtime.clientId, traits: runtime.traits, maxHoldMs: runtime.maxHoldMs, check: () => undefined, take: (t) => this.#take(t.waitMs, t.leaseMs, t.signal, t.trace) };
    identities.set(this, { runtime, key: keys.lock, name, kind });
  }

  /** This lock's own `maxHoldMs` (`client.lock(name, { maxHoldMs })`): its acquires' default, before the client's. */
  boundHolds(maxHoldMs: number | undefined): this {
    if (maxHoldMs !== undefined) this.#taker = { ...this.#taker, maxHoldMs };
    return this;
  }

  /**
   * Takes the lock for a fresh hold (not a re-entry) once the arguments are checked; `trace` is the
   * acquire's tracing context when someone listens.
   */
  protected abstract takeFresh(waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined, trace?: AcquireTraceContext): Promise<Lease>;

  /** Re-enters when the current context holds the lock, else takes it afresh. */
  async #take(waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined, trace?: AcquireTraceContext): Promise<Lease> {
    const runtime = this.#runtime;
    if (runtime.closed.aborted) throw closedBeforeCall(runtime.closed.reason, this.name);
    signal?.throwIfAborted();
    const held = runtime.context.find(this.#keys.lock);
    if (held) {
      // Re-entry never waits or queues: the context holds the lock already.
      const count = await held.reenter(leaseMs);
      // Released beside this call (its last release won the race): the lock is taken afresh.
      if (count !== undefined) return new LeaseImpl(held, count, this.#kind, runtime.clientId, runtime.closed);
    }
    return this.takeFresh(waitMs, leaseMs, signal, trace);
  }

  acquire(options?: AcquireOptions): Promise<Lease> {
    return frontAcquire(this.#taker, options);
  }

  tryAcquire(options?: TryAcquireOptions): Promise<Lease | null> {
    return frontTryAcquire(this.#taker, options);
  }

  runExclusive<T>(fn: (lease: Lease) => T | Promise<T>, options?: AcquireOptions): Promise<T> {
    return frontRunExclusive(() => this.acquire(options) as Promise<LeaseImpl>, fn);
  }

  isLocked(): Promise<boolean> {
    return this.#reads.isLocked(this.#keys);
  }

  async isHeldByCurrentContext(): Promise<boolean> {
    return (await this.holdCount()) > 0;
  }

  async holdCount(): Promise<number> {
    const hold = this.#runtime.context.find(this.#keys.lock);
    return hold ? this.#reads.holdCount(this.#keys, hold.owner) : 0;
  }

  remainingTtlMs(): Promise<number | null> {
    return this.#reads.remainingTtlMs(this.#keys);
  }

  async forceUnlock(): Promise<boolean> {
    const deleted = await this.#reads.forceRelease(this.#keys);
    this.#runtime.watchdog.loseKey(this.#keys.lock, new LockLostError(`Lock "${this.name}" was force-unlocked`, { lockName: this.name }));
    return deleted;
  }
}
