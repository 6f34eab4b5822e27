// A fair waiter's life: try once before listening; subscribe to this client's grant channel; join
// the Redis queue; sleep until a grant is offered (by message, by a release or leave reply of this
// client, or by a heartbeat reply); own it on receipt when its claim provably lasts, else confirm
// first; and when the wait gives up, `leave` (which hands on a grant that arrived meanwhile).
import { debuglog } from 'node:util';
import { LockTimeoutError } from '../errors.ts';
import { LeaseImpl } from '../lease.ts';
import { Hold } from '../runtime/hold.ts';
import { backoffMs, isFiniteWait, isUnreachable, leaseTooShort, MAX_LATE, settledWithin, type WaitState } from '../runtime/acquire.ts';
import { LEAVE_WAIT_MS } from '../runtime/waits.ts';
import { attempt, claim, type FairWait, type Taken } from './claim.ts';
import { FairWaiter, type Grant } from './grants.ts';
import type { Heartbeat } from './heartbeat.ts';
import { grantChannel } from './keys.ts';
import { heartbeatFor } from './shared.ts';

const log = debuglog('relock:fair-lock');

/** Waits until this client holds the lock, or `stop` aborts. */
export function fairWait(w: FairWait, stop: AbortSignal, state: WaitState): Promise<Taken> {
  return new FairWaiting(w, stop, state).run();
}

/**
 * One fair wait: its steps (try first, enter, join, claim a grant, sleep, leave) are methods, its
 * state fields. The hold changes only after a late reply (the same owner queues again).
 */
class FairWaiting {
  readonly #w: FairWait;
  readonly #stop: AbortSignal;
  readonly #state: WaitState;
  readonly #init: ConstructorParameters<typeof Hold>[1];
  readonly #channel: string;
  readonly #startedAt: number;
  readonly #waiter: FairWaiter;
  #hold: Hold;
  /** Replies in a row that came after the lease they began (a slow network or a paused process). */
  #late = 0;
  #heartbeat: Heartbeat | undefined;
  #entered = false;
  /** The owner may be in the queue, or hold a grant it does not know of: `leave` must run. */
  #queued = false;
  #lease: LeaseImpl | undefined;
  #failures = 0;
  /** This client's earlier acquire of the lock that has not taken its place in the queue yet. */
  #before: Promise<void> | undefined;
  #placed: () => void = () => undefined;
  readonly #mine: Promise<void>;

  constructor(w: FairWait, stop: AbortSignal, state: WaitState) {
    const { runtime } = w.shared;
    this.#w = w;
    this.#stop = stop;
    this.#state = state;
    this.#channel = grantChannel(w.keys, runtime.clientId);
    this.#startedAt = runtime.watchdog.clock.now();
    this.#init = { name: w.name, key: w.keys.lock, renewer: w.shared.renewer, scripts: w.scripts, renewable: w.leaseMs === undefined };
    this.#hold = new Hold(runtime, this.#init);
    this.#waiter = new FairWaiter(this.#hold.owner, runtime.watchdog.clock);
    // This client's acquires of a lock take their places in the queue in the order they started: one
    // that skipped its try must not join before an earlier one still trying.
    const { placing } = w.shared;
    this.#before = placing.get(w.keys.lock);
    this.#mine = new Promise<void>((resolve) => (this.#placed = resolve));
    placing.set(w.keys.lock, this.#mine);
  }

  async run(): Promise<Taken> {
    const { keys } = this.#w;
    const { underWay } = this.#w.shared;
    const contended = (underWay.get(keys.lock) ?? 0) > 0;
    underWay.set(keys.lock, (underWay.get(keys.lock) ?? 0) + 1);
    try {
      const first = await this.#tryFirst(contended);
      if (first) return first;
      await this.#enter();
      return await this.#serve();
    } finally {
      await this.#finish();
    }
  }

  #taken(lease: LeaseImpl): Taken {
    this.#lease = lease;
    return { lease, hold: this.#hold };
  }

  /** After a late reply: the same owner queues again with a hold of its own (the given-back one may be lost). */
  #lateAgain(): void {
    if (++this.#late >= MAX_LATE || this.#w.waitMs === 0) throw leaseTooShort(this.#w.name, this.#late);
    this.#hold = new Hold(this.#w.shared.runtime, { ...this.#init, owner: this.#hold.owner });
  }

  #place(): void {
    this.#placed();
    const { placing } = this.#w.shared;
    if (placing.get(this.#w.keys.lock) === this.#mine) placing.delete(this.#w.keys.lock);
  }

  /**
   * Never queue before listening (PUBLISH would count this client unreachable): a client not yet
   * subscribed tries once first, unless another acquire of its own on this lock is under way (the
   * lock is contended: it subscribes, then joins); one that is already listening joins at once.
   */
  async #tryFirst(contended: boolean): Promise<Taken | undefined> {
    const w = this.#w;
    if (w.waitMs !== 0 && (w.shared.runtime.waiting.listening(this.#channel) || contended)) return undefined;
    const { runner } = w.shared;
    const mark = runner.mark();
    this.#queued = true;
    let got;
    try {
      got = await attempt(w, this.#hold, 'try');
    } catch (error) {
      // A finite wait rides out a connection failure in the queue, as its joins do; others fail fast.
      if (!isFiniteWait(this.#w.waitMs) || !isUnreachable(error)) throw error;
      this.#state.unreachable = error;
      return undefined;
    }
    if (got instanceof LeaseImpl) return this.#taken(got);
    // A try that ioredis resent may have taken the lock for this owner the first time.
    this.#queued = runner.maybeResent(mark);
    if (got === 'late') this.#lateAgain();
    if (w.waitMs === 0) throw new LockTimeoutError(`Lock "${w.name}" was not acquired within 0 ms: it is held`, { lockName: w.name });
    return undefined;
  }

  /** Listens on this client's grant channel, and heartbeats for the owner from now on. */
  async #enter(): Promise<void> {
    const { shared, name } = this.#w;
    for (;;) {
      this.#stop.throwIfAborted();
      try {
        await shared.runtime.waiting.enter(this.#channel, this.#waiter, shared.waiters.rule, name, { handsOn: false, lingerMs: shared.settings.keepListeningMs });
        break;
      } catch (error) {
        // Never queued before listening: a finite wait subscribes again until it ends.
        if (!isFiniteWait(this.#w.waitMs) || !isUnreachable(error)) throw error;
        this.#state.unreachable = error;
        await this.#waiter.sleep(backoffMs(this.#failures++), this.#stop);
      }
    }
    this.#entered = true;
    shared.waiters.add(this.#waiter);
    this.#heartbeat = heartbeatFor(shared, this.#w.keys);
    this.#heartbeat.add(this.#hold.owner);
  }

  /** Joins the queue, sleeps until offered a grant, claims it; joins again when a claim or a reply came too late. */
  async #serve(): Promise<Taken> {
    const { runtime } = this.#w.shared;
    let join = true;
    let grant: Grant | undefined;
    for (;;) {
      this.#stop.throwIfAborted();
      grant ??= this.#waiter.take();
      if (grant) {
        const got = await claim(this.#w, this.#hold, grant, this.#stop);
        grant = undefined;
        if (got) return this.#taken(got);
        // The claim ended before it was confirmed (this process was paused): queue again.
        join = true;
        continue;
      }
      let sleepMs = runtime.leaseMs;
      if (join) {
        const joined = await this.#join();
        if (joined instanceof LeaseImpl) return this.#taken(joined);
        if (joined === 'late') continue;
        if (joined === 'queued') join = false;
        else sleepMs = joined.backoffMs;
      }
      await this.#waiter.sleep(sleepMs, this.#stop);
      grant = this.#waiter.take();
      if (grant || join) continue;
      this.#wokenEmpty();
    }
  }

  /**
   * One join: the lease (the lock was free for this owner), 'late' (queued again with a new hold),
   * 'queued', or a backoff while Redis is unreachable (a finite wait rides it out; others fail fast).
   */
  async #join(): Promise<LeaseImpl | 'late' | 'queued' | { readonly backoffMs: number }> {
    this.#queued = true;
    try {
      if (this.#before) await this.#before;
      this.#before = undefined;
      this.#stop.throwIfAborted();
      // The join is batched with this turn's others as the call is made: the next may follow.
      const joining = attempt(this.#w, this.#hold, 'wait');
      this.#place();
      const got = await joining;
      if (got instanceof LeaseImpl) return got;
      if (got === 'late') {
        this.#lateAgain();
        return 'late';
      }
      this.#late = 0;
      this.#failures = 0;
      this.#state.unreachable = undefined;
      return 'queued';
    } catch (error) {
      if (!isFiniteWait(this.#w.waitMs) || !isUnreachable(error)) throw error;
      this.#state.unreachable = error;
      return { backoffMs: backoffMs(this.#failures++) };
    }
  }

  /** Woken without a grant: grant messages may have been lost, or a lease went by. */
  #wokenEmpty(): void {
    const { runtime } = this.#w.shared;
    const { watchdog } = runtime;
    // The subscriber reconnected, and grant messages may have been lost.
    if (this.#waiter.nudged()) this.#heartbeat?.soon();
    // Or a lease went by: the `await using` trap, if this client itself holds the lock.
    else if (watchdog.clock.now() - this.#startedAt > runtime.leaseMs && watchdog.heldSince(this.#w.keys.lock, this.#startedAt)) runtime.warnSelfWait(this.#w.name);
  }

  /** Leaves the queue (which hands on a grant that arrived meanwhile) unless the wait ended holding the lock. */
  async #finish(): Promise<void> {
    const { shared, keys, name } = this.#w;
    const { underWay, waiters, commands, runner } = shared;
    this.#place();
    const left = underWay.get(keys.lock)! - 1;
    if (left > 0) underWay.set(keys.lock, left);
    else underWay.delete(keys.lock);
    if (this.#entered) {
      waiters.delete(this.#waiter);
      this.#heartbeat?.delete(this.#hold.owner);
      shared.runtime.waiting.leave(this.#channel, this.#waiter);
    }
    if (this.#queued && !this.#lease) {
      // Sent after everything this wait sent, on the same connection: it runs after them. The
      // rejection of the acquire waits for it, briefly (see fair-lock.ts, SETTLE_MS).
      const owner = this.#hold.owner;
      const { runtime } = shared;
      // What the owner may hold (a try whose reply was lost, a grant) ends with a lease at the latest.
      const untilMs = runtime.watchdog.clock.now() + (this.#w.leaseMs ?? runtime.leaseMs);
      const leave = () => commands.leave(keys, owner).then((outcome) => outcome.grant && waiters.offer(outcome.grant));
      const leaving = leave().catch((error: Error) => {
        log('leave of %s failed: %s', name, error.message);
        // Not sent for want of a connection: sent again when it is back (nobody else will).
        if (isUnreachable(error)) runtime.resend(leave, untilMs);
      });
      if (runner.ready) await settledWithin(leaving, LEAVE_WAIT_MS);
    }
  }
}
