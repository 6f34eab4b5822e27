// One owner's hold on one lock, shared by the leases of its nested acquisitions: its state, and the
// transitions that change it (acquired, re-entered, released one level or whole, lost).
import { Mutex } from 'async-mutex';
import { diagnostics, type LostMessage } from '../diagnostics.ts';
import { LockError, LockLostError, LockNotHeldError } from '../errors.ts';
import type { Runtime } from './runtime.ts';
import type { Renewable, Renewer } from './renewable.ts';
import { isUnreachable } from './wait-errors.ts';

/** What a release script answered: the owner's count left, or that the owner held nothing. */
export type ReleaseOutcome = { readonly kind: 'released'; readonly left: number } | { readonly kind: 'gone' };
/** What a re-entry script answered: the owner's count now, or that the owner held nothing. */
export type ReenterOutcome = { readonly kind: 'entered'; readonly count: number } | { readonly kind: 'gone' };

/** Names a release script's reply: -1 the owner held nothing, else its count left. */
export const releaseOutcome = (reply: unknown): ReleaseOutcome => {
  const left = Number(reply);
  return left < 0 ? { kind: 'gone' } : { kind: 'released', left };
};

/** Names a re-entry script's reply: -1 the owner held nothing, else its count now. */
export const reenterOutcome = (reply: unknown): ReenterOutcome => {
  const count = Number(reply);
  return count < 0 ? { kind: 'gone' } : { kind: 'entered', count };
};

/** The scripts a primitive runs for a hold; the hold decides when. */
export interface HoldScripts {
  /**
   * One level (whole false), or every level (whole true: the outermost lease). `keepMs` (a job's
   * end, only where the kind supports it): when the whole hold goes, the lock stays taken until
   * `keepMs` after the hold's start, by Redis's clock.
   */
  release(hold: Hold, believed: number, whole: boolean, keepMs?: number): Promise<ReleaseOutcome>;
  /** One more level, lengthening a fixed lease to `leaseMs` (never shortening). */
  reenter?(hold: Hold, believed: number, leaseMs: number | undefined): Promise<ReenterOutcome>;
}

export interface HoldInit {
  readonly name: string;
  /** The key force-unlocking ends, and the scope key of reentrancy. */
  readonly key: string;
  readonly renewer: Renewer;
  readonly scripts: HoldScripts;
  /** Kept alive by the watchdog (true) or a fixed lease (false). */
  readonly renewable: boolean;
  /** The owner id; a fresh one (`runtime.newOwner()`) when absent. */
  readonly owner?: string;
  /** The lease each renewal gives it, when not the client's (a leader's own `leaseMs`). */
  readonly renewLeaseMs?: number | undefined;
}

export class Hold implements Renewable {
  readonly name: string;
  readonly key: string;
  readonly owner: string;
  readonly renewer: Renewer;
  readonly renewable: boolean;
  readonly renewLeaseMs: number | undefined;
  #held = false;
  #acquiredAt = Number.POSITIVE_INFINITY;
  #count = 0;
  #token = 0;
  #lost: LockLostError | undefined;
  readonly #runtime: Runtime;
  readonly #scripts: HoldScripts;
  /** Made when someone first asks for the signal: most leases are released without anyone asking. */
  #controller: AbortController | undefined;
  #mutex: Mutex | undefined;
  /** The operation running outside the mutex, until it settles. */
  #running: Promise<void> | undefined;
  /** Its last release failed for want of a connection: relock sends it again (once at a time). */
  #resending = false;
  /** ... and that resend landed. */
  #resent = false;

  constructor(runtime: Runtime, init: HoldInit) {
    this.#runtime = runtime;
    this.#scripts = init.scripts;
    this.name = init.name;
    this.key = init.key;
    this.renewer = init.renewer;
    this.renewable = init.renewable;
    this.renewLeaseMs = init.renewLeaseMs;
    this.owner = init.owner ?? runtime.newOwner();
  }

  /** Whether the first acquisition went through and the hold is not lost or released. */
  get held(): boolean {
    return this.#held;
  }

  /** clock.now() when the acquire that took it was sent. */
  get acquiredAt(): number {
    return this.#acquiredAt;
  }

  /** The levels held (nested acquisitions), as Redis last answered. */
  get count(): number {
    return this.#count;
  }

  /** The fencing token of the first acquisition. */
  get token(): number {
    return this.#token;
  }

  /** Why the hold was lost, once it was. */
  get lost(): LockLostError | undefined {
    return this.#lost;
  }

  /** clock.now() by which the hold counts as lost: the watchdog's record. */
  get deadline(): number {
    return this.#runtime.watchdog.deadlineOf(this);
  }

  lose(error: LockLostError): void {
    this.#held = false;
    if (this.#lost) return;
    this.#lost = error;
    this.#controller?.abort(error);
    if (diagnostics.lost.hasSubscribers) diagnostics.lost.publish({ clientId: this.#runtime.clientId, name: this.name, error, fencingToken: this.#token } satisfies LostMessage);
  }

  /** The loss, checked against the local deadline now: after a long event-loop block the timer may not have fired yet. */
  check(): LockLostError | undefined {
    if (this.lost || !this.held) return this.lost;
    const { watchdog } = this.#runtime;
    const now = watchdog.clock.now();
    const overHeld = watchdog.overHeld(this, now);
    if (overHeld) watchdog.lose(this, overHeld);
    else if (now >= this.deadline) watchdog.lose(this, new LockLostError(`Lock "${this.name}" reached the end of its lease`, { lockName: this.name }));
    return this.lost;
  }

  /** Ends the hold `maxHoldMs` after its acquisition (`nested`: after now) at the latest (see Watchdog.endBy). */
  endBy(maxHoldMs: number, nested: boolean): void {
    const { watchdog } = this.#runtime;
    watchdog.endBy(this, (nested ? watchdog.clock.now() : this.#acquiredAt) + maxHoldMs, maxHoldMs);
  }

  get signal(): AbortSignal {
    this.#controller ??= new AbortController();
    const lost = this.check();
    if (lost && !this.#controller.signal.aborted) this.#controller.abort(lost);
    return this.#controller.signal;
  }

  /**
   * Serialises re-entries and releases, so each sends the count the one before left. An idle hold runs
   * the operation at once (most holds see one release and nothing else); a second operation that
   * arrives meanwhile queues on a mutex, behind the one running.
   */
  /**
   * Runs `fn` in the order of this hold's calls (a release or re-entry made meanwhile waits): a fair
   * grant's confirm, whose EVAL after a NOSCRIPT would otherwise run after a release sent meanwhile.
   */
  serially<T>(fn: () => Promise<T>): Promise<T> {
    return this.#serial(fn);
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#running === undefined && !this.#mutex?.isLocked()) {
      const running = fn();
      const settled: Promise<void> = running.then(
        () => this.#idle(settled),
        () => this.#idle(settled),
      );
      this.#running = settled;
      return running;
    }
    this.#mutex ??= new Mutex();
    return this.#mutex.runExclusive(async () => {
      while (this.#running) await this.#running;
      return fn();
    });
  }

  #idle(settled: Promise<void>): void {
    if (this.#running === settled) this.#running = undefined;
  }

  /** The first acquisition went through: the command that took it was sent at `sentAt`. */
  acquired(token: number, sentAt: number, leaseMs: number): void {
    this.heldAs(token, sentAt);
    this.#runtime.watchdog.leaseFrom(this, sentAt, leaseMs);
  }

  /** Held at one level under `token` since `acquiredAt`, with no lease of its own (another hold's lease keeps it). */
  protected heldAs(token: number, acquiredAt: number): void {
    this.#count = 1;
    this.#token = token;
    this.#held = true;
    this.#acquiredAt = acquiredAt;
  }

  /** Ends with a loss another hold signalled: not held any more, nothing signalled again. */
  protected endedBy(error: LockLostError): void {
    this.#held = false;
    this.#lost ??= error;
  }

  /** Runs `fn` in an async context where this hold is the current one for its key. */
  run<T>(fn: () => T | Promise<T>): Promise<T> {
    return this.#runtime.context.run(this.key, this, fn);
  }

  /**
   * One more level of this hold. Resolves to the new count, or to undefined when the hold was released
   * meanwhile (the caller then takes the lock afresh).
   */
  reenter(leaseMs: number | undefined): Promise<number | undefined> {
    return this.#serial(async () => {
      if (this.check()) throw this.lost;
      if (this.count === 0) return undefined;
      const { watchdog } = this.#runtime;
      const sentAt = watchdog.clock.now();
      const believed = this.count;
      let outcome: ReenterOutcome;
      try {
        outcome = await this.#scripts.reenter!(this, believed, leaseMs);
      } catch (error) {
        // No answer (a client-side timeout): the script may still run later. A release that expects
        // one level more gives that level back if it was taken, and changes nothing if not.
        if (error instanceof LockError && error.code === 'ERR_LOCK_UNREACHABLE') {
          await this.#scripts.release(this, believed + 1, false).catch(() => undefined);
        }
        throw error;
      }
      if (outcome.kind === 'gone') {
        const error = new LockLostError(`Lock "${this.name}" was lost before a nested acquire`, { lockName: this.name });
        this.#count = 0;
        watchdog.lose(this, error);
        throw error;
      }
      this.#count = outcome.count;
      // The script only ever lengthens a fixed lease; so does the local deadline.
      if (leaseMs !== undefined && !watchdog.renews(this)) watchdog.lengthen(this, sentAt, leaseMs);
      return outcome.count;
    });
  }

  /**
   * Gives back one level of the hold, or all of it for the outermost lease (`whole`): then renewal
   * stops before the release is sent, whether it succeeds or not, and the owner's field goes
   * whatever its count (a nested release that failed cannot leave it held).
   */
  release(whole: boolean, keepMs?: number): Promise<void> {
    return this.#serial(async () => {
      const { watchdog, runner } = this.#runtime;
      const believed = this.count;
      // A release that failed for want of a connection was sent again by relock, and landed.
      if (believed === 0 && this.#resent) return;
      if (believed === 0) throw this.notHeld();
      const last = whole || believed === 1;
      if (last) {
        // Renewal is cancelled before the release is sent, and this hold's call in flight lands first
        // (or reaches its bound); other holds' calls are not waited for. A lost hold skips the wait:
        // its renewal may hang on an unreachable Redis, and there is nothing to protect.
        watchdog.stopRenewing(this);
        const renewal = watchdog.renewalOf(this);
        if (!this.lost && renewal) await renewal;
      }
      const lostBefore = this.lost !== undefined;
      const mark = runner.mark();
      let outcome: ReleaseOutcome;
      try {
        outcome = await this.#scripts.release(this, believed, whole, last ? keepMs : undefined);
      } catch (error) {
        // The last level, renewed no more, and not reached: nobody else will release it, so relock
        // sends it again when the connection is back (the caller still hears that this one failed).
        if (last && !lostBefore && isUnreachable(error)) this.#resend(believed, whole, keepMs);
        // A hold signalled lost is not held, reached or not (its key ends with its lease): said so,
        // the failure as the cause (ioredis resends a cut release and hears "gone"; node-redis fails it).
        if (!lostBefore || !isUnreachable(error)) throw error;
        [this.#count, this.#held] = [0, false];
        watchdog.delete(this);
        throw this.notHeld(error);
      }
      if (outcome.kind === 'gone' && last && !lostBefore && runner.maybeResent(mark)) {
        // The connection dropped while the release was out and ioredis sent it again: the first
        // attempt went through, so the retry found nothing. (Not for a hold already signalled lost:
        // that one was gone before the release was sent.)
        outcome = { kind: 'released', left: 0 };
      }
      if (outcome.kind === 'gone') {
        this.#count = 0;
        watchdog.lose(this, new LockLostError(`Lock "${this.name}" was lost before its release`, { lockName: this.name }));
        throw this.notHeld();
      }
      this.#count = outcome.left;
      if (outcome.left === 0) {
        this.#held = false;
        watchdog.delete(this);
      }
    });
  }

  /**
   * The last release, sent again (in this hold's order) until it lands or the hold's lease ends; a
   * release the caller made meanwhile that landed ends it. Landed, even as "gone" (the first one may
   * have run after all), the hold is released.
   */
  #resend(believed: number, whole: boolean, keepMs: number | undefined): void {
    if (this.#resending) return;
    this.#resending = true;
    const { watchdog } = this.#runtime;
    const send = () =>
      this.#serial(async () => {
        if (this.count === 0) return;
        const outcome = await this.#scripts.release(this, believed, whole, keepMs);
        this.#count = outcome.kind === 'released' ? outcome.left : 0;
        if (this.#count > 0) return;
        this.#held = false;
        this.#resent = true;
        watchdog.delete(this);
      });
    this.#runtime.resend(send, this.deadline);
  }

  /**
   * Its outermost lease was garbage-collected without a release (a caller's bug): renewed no more, so
   * the lock ends with its lease, and the client warns (ERR_LOCK_ABANDONED). Not released: code that
   * dropped the lease may still be working under it.
   */
  abandon(): void {
    const { watchdog } = this.#runtime;
    if (!this.held || this.lost || !watchdog.renews(this)) return;
    watchdog.stopRenewing(this);
    this.#runtime.warn(
      new LockError(`A lease of lock "${this.name}" was garbage-collected without a release: it is no longer renewed and ends with its lease. Release every lease (runExclusive, await using).`, {
        lockName: this.name,
        code: 'ERR_LOCK_ABANDONED',
      }),
    );
  }

  /** Gives back a hold nobody will own (its acquire gave up meanwhile); errors are only logged by the caller. */
  giveBack(): Promise<void> {
    return this.release(true);
  }

  /**
   * Replica sync (`replicas` > 0) of a first acquisition, before its lease is handed out: resolves
   * once that many replicas have it (WAIT); else gives the hold back and rejects with
   * `ERR_LOCK_REPLICATION`. Without replica sync, nothing is sent.
   */
  async replicated(): Promise<void> {
    if (this.#runtime.replicas === 0) return;
    try {
      await this.#runtime.replicate(this.key, this.name);
    } catch (error) {
      this.giveBack().catch(() => undefined);
      throw error;
    }
  }

  notHeld(cause?: unknown): LockNotHeldError {
    return new LockNotHeldError(`Lock "${this.name}" is not held by this owner (expired, force-unlocked, or released)`, {
      lockName: this.name,
      ...(cause === undefined ? {} : { cause }),
    });
  }
}
