// One timer per client: renews every renewable hold in batches through its primitive's renewer, and
// signals a hold as lost when it could not be renewed before its lease would end (or, for a fixed
// lease, when it ends). Each batch's call is bounded and in flight on its own: a server that never
// answers costs only the holds it serves.
import { debuglog } from 'node:util';
import { diagnostics, type RenewMessage } from '../diagnostics.ts';
import { LockError, LockLostError } from '../errors.ts';
import { holdMarginMs, type Renewable, type Renewer } from './renewable.ts';
import { systemClock, type Clock } from './waiter.ts';

const log = debuglog('relock:watchdog');

/**
 * How long one renewal call may stay unanswered before it counts as "not renewed this round": half the
 * lease, a renewal period and a half. The next round finds it still out and sends nothing more for
 * its holds (no second call piled on a silent server); the round after sends them again.
 */
function renewalBoundMs(leaseMs: number): number {
  return leaseMs / 2;
}

/** What the watchdog decides of a hold: when it counts as lost, and whether it is still renewed. */
interface Tracked {
  deadline: number;
  /** maxHoldMs: clock.now() at which the hold ends whatever its lease, and that bound (Infinity: none). */
  endsAt: number;
  maxHoldMs: number;
  /** The margin its deadline keeps before the lease ends on Redis: the most the loss may come earlier for a late loop. */
  marginMs: number;
  renewing: boolean;
}

/**
 * How the loop's lateness estimate decays per tick of the watchdog (a tick every third of a lease at
 * most): a spike is remembered for a few renewal periods, then forgotten.
 */
const LATENESS_DECAY = 0.75;

/** One renewal call out: its holds, and its settling, once answered or past its bound. */
interface Call {
  readonly holds: readonly Renewable[];
  /** Settles when the call is answered or reaches its bound (never rejects). */
  readonly settled: Promise<void>;
  readonly finish: () => void;
  timer: unknown;
}

export interface WatchdogOptions {
  readonly leaseMs: number;
  readonly clientId: string;
  /** Renewal failures go here (the client reports them). */
  readonly onError: (error: Error) => void;
  readonly clock?: Clock | undefined;
  /** On a Cluster, the hash slot of a key: one script call cannot span slots, so batches never do. */
  readonly slotOf?: ((key: string) => number) | undefined;
}

export class Watchdog {
  readonly #leaseMs: number;
  readonly #clientId: string;
  readonly #onError: (error: Error) => void;
  readonly #clock: Clock;
  readonly #slotOf: ((key: string) => number) | undefined;
  readonly #holds = new Set<Renewable>();
  /** Its own record of each hold it was given (kept after the hold leaves #holds: a deadline outlives renewal). */
  readonly #records = new WeakMap<Renewable, Tracked>();
  /** How many of #holds are renewable: the first one after none starts a renewal period. */
  #renewables = 0;
  #timer: unknown;
  #timerAt = Number.POSITIVE_INFINITY;
  /** When the armed timer should fire (its delay from when it was armed): its lateness is measured from this. */
  #timerDueAt = Number.POSITIVE_INFINITY;
  /**
   * How late this process's timers have fired lately (the largest lateness, decaying): a busy event
   * loop fires the loss timer late too, so a hold counts as lost this much earlier (at most its
   * margin), and its signal still comes before the lease ends on Redis.
   */
  #lateMs = 0;
  #nextRenewalAt = 0;
  /** The renewal calls out (not answered, not past their bound). */
  readonly #calls = new Set<Call>();
  /** Each hold in a call out, and that call: it is not sent again meanwhile, and its release waits for that call only. */
  readonly #renewing = new Map<Renewable, Call>();
  #stopped = false;

  constructor(options: WatchdogOptions) {
    this.#leaseMs = options.leaseMs;
    this.#clientId = options.clientId;
    this.#onError = options.onError;
    this.#clock = options.clock ?? systemClock;
    this.#slotOf = options.slotOf;
  }

  get clock(): Clock {
    return this.#clock;
  }

  #record(hold: Renewable): Tracked {
    let record = this.#records.get(hold);
    if (!record) this.#records.set(hold, (record = { deadline: Number.POSITIVE_INFINITY, endsAt: Number.POSITIVE_INFINITY, maxHoldMs: 0, renewing: hold.renewable, marginMs: 0 }));
    return record;
  }

  /** clock.now() by which the hold counts as lost (Infinity before its acquire went through). */
  deadlineOf(hold: Renewable): number {
    return this.#records.get(hold)?.deadline ?? Number.POSITIVE_INFINITY;
  }

  /** Whether the hold is renewed (else its lease only ends): false once stopRenewing() was called. */
  renews(hold: Renewable): boolean {
    return this.#records.get(hold)?.renewing ?? hold.renewable;
  }

  /** Starts watching a hold: renewable ones from now on (before their acquire is sent). */
  add(hold: Renewable): void {
    if (this.#stopped) return;
    if (!this.#holds.has(hold)) {
      this.#holds.add(hold);
      if (this.#record(hold).renewing) {
        const periodAt = this.#clock.now() + this.#leaseOf(hold) / 3;
        // The first renewable after none starts a renewal period; a shorter lease than any so far shortens it.
        if (this.#renewables++ === 0 || periodAt < this.#nextRenewalAt) this.#nextRenewalAt = periodAt;
      }
    }
    this.#wakeBy(this.#due(hold));
  }

  /** The lease a renewal gives the hold: its own, or the client's. */
  #leaseOf(hold: Renewable): number {
    return hold.renewLeaseMs ?? this.#leaseMs;
  }

  /** Sets when the hold counts as lost: the lease that began when its command was sent, less the margin. */
  leaseFrom(hold: Renewable, sentAt: number, leaseMs: number): void {
    const record = this.#record(hold);
    record.marginMs = holdMarginMs(hold, leaseMs);
    record.deadline = sentAt + leaseMs - record.marginMs;
    this.add(hold);
  }

  /** Moves a fixed lease's deadline later, never earlier (a nested acquire with a longer lease). */
  lengthen(hold: Renewable, sentAt: number, leaseMs: number): void {
    this.#extend(this.#record(hold), hold, sentAt, leaseMs);
  }

  /** A lease from `sentAt` on, when it ends later than the one the record has. */
  #extend(record: Tracked, hold: Renewable, sentAt: number, leaseMs: number): void {
    const marginMs = holdMarginMs(hold, leaseMs);
    if (sentAt + leaseMs - marginMs <= record.deadline) return;
    record.deadline = sentAt + leaseMs - marginMs;
    record.marginMs = marginMs;
  }

  /**
   * Ends the hold at `at` (clock.now()) at the latest, `maxHoldMs` after its acquisition: it is not
   * renewed after that and is lost then with ERR_LOCK_MAX_HOLD. Never later than an end set before.
   */
  endBy(hold: Renewable, at: number, maxHoldMs: number): void {
    const record = this.#record(hold);
    if (at >= record.endsAt) return;
    record.endsAt = at;
    record.maxHoldMs = maxHoldMs;
    this.#wakeBy(at);
  }

  /** The loss of a hold past its maxHoldMs at `now`, or undefined. */
  overHeld(hold: Renewable, now: number): LockLostError | undefined {
    const record = this.#records.get(hold);
    if (!record || now < record.endsAt) return undefined;
    return new LockLostError(`Lock "${hold.name}" reached its maxHoldMs (${record.maxHoldMs} ms): it is no longer renewed`, { lockName: hold.name, code: 'ERR_LOCK_MAX_HOLD' });
  }

  /** When the hold counts as lost: its deadline, earlier by the loop's recent lateness (at most its margin). */
  #lossAt(hold: Renewable): number {
    const record = this.#records.get(hold);
    return record ? record.deadline - Math.min(this.#lateMs, record.marginMs) : Number.POSITIVE_INFINITY;
  }

  /** Stops renewing the hold but keeps its deadline: it ends as a fixed lease would. */
  stopRenewing(hold: Renewable): void {
    const record = this.#record(hold);
    if (record.renewing && this.#holds.has(hold)) this.#renewables--;
    record.renewing = false;
  }

  /** Stops watching a hold. The timer stays: a tick with nothing to do costs nothing. */
  delete(hold: Renewable): void {
    if (this.#holds.delete(hold) && this.renews(hold)) this.#renewables--;
  }

  lose(hold: Renewable, error: LockLostError): void {
    this.delete(hold);
    hold.lose(error);
  }

  /** Every hold of this client on that key counts as lost now (it was force-unlocked). */
  loseKey(key: string, error: LockLostError): void {
    for (const hold of this.#holds) if (hold.key === key && hold.held) this.lose(hold, error);
  }

  /** Whether this client has held that key without a break since `since` (the await-using warning asks). */
  heldSince(key: string, since: number): boolean {
    for (const hold of this.#holds) if (hold.key === key && hold.held && hold.acquiredAt <= since) return true;
    return false;
  }

  /**
   * The renewal call out for this hold, if any (settled once answered or past its bound): its release
   * waits for it, so that the release is never followed by that renewal. Other holds' calls are not
   * waited for.
   */
  renewalOf(hold: Renewable): Promise<void> | undefined {
    return this.#renewing.get(hold)?.settled;
  }

  /** Every renewal call out now, settled once each is answered or past its bound; undefined when none is. */
  get inFlight(): Promise<void> | undefined {
    if (this.#calls.size === 0) return undefined;
    return Promise.all([...this.#calls].map((call) => call.settled)).then(() => undefined);
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  stop(error: LockLostError): void {
    this.#stopped = true;
    this.#clock.clearTimeout(this.#timer);
    for (const hold of this.#holds) if (hold.held) this.lose(hold, error);
    this.#holds.clear();
    this.#renewables = 0;
    // Nothing is waited for after stop(): no bound timer is left armed, and a late answer finds no hold.
    for (const call of this.#calls) this.#settle(call);
  }

  /** When the watchdog must look at this hold next. */
  #due(hold: Renewable): number {
    const deadline = hold.held ? Math.min(this.#lossAt(hold), this.#records.get(hold)?.endsAt ?? Number.POSITIVE_INFINITY) : Number.POSITIVE_INFINITY;
    return this.renews(hold) ? Math.min(deadline, this.#nextRenewalAt) : deadline;
  }

  /** Makes sure the timer fires by `at`: it only ever moves earlier here, in O(1). */
  #wakeBy(at: number): void {
    if (this.#stopped || at >= this.#timerAt) return;
    this.#clock.clearTimeout(this.#timer);
    this.#timerAt = at;
    const now = this.#clock.now();
    this.#timerDueAt = Math.max(at, now);
    this.#timer = this.#clock.setTimeout(() => this.#tick(), Math.max(0, at - now));
  }

  #tick(): void {
    const now = this.#clock.now();
    this.#lateMs = Math.max(now - this.#timerDueAt, this.#lateMs * LATENESS_DECAY);
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    this.#timerDueAt = Number.POSITIVE_INFINITY;
    for (const hold of this.#holds) {
      const overHeld = hold.held ? this.overHeld(hold, now) : undefined;
      if (overHeld) this.lose(hold, overHeld);
      else if (hold.held && now >= this.#lossAt(hold)) {
        const ended = this.renews(hold) ? 'could not be renewed before its lease ended' : 'reached the end of its lease';
        this.lose(hold, new LockLostError(`Lock "${hold.name}" ${ended}`, { lockName: hold.name }));
      }
    }
    if (now >= this.#nextRenewalAt && this.#renewables > 0) {
      // Every third of the shortest lease renewed (the client's, or a leader's own shorter one).
      let shortest = this.#leaseMs;
      for (const hold of this.#holds) if (hold.renewLeaseMs !== undefined && hold.renewLeaseMs < shortest && this.renews(hold)) shortest = hold.renewLeaseMs;
      this.#nextRenewalAt = now + shortest / 3;
      // Holds whose call is still out are left out: while it hangs (a silent server), their deadlines
      // still fire, and every other batch is renewed as usual.
      this.#renew(now);
    }
    for (const hold of this.#holds) this.#wakeBy(this.#due(hold));
  }

  #renew(sentAt: number): void {
    // Grouped by renewer (one script per primitive), by lease (the client's, or a leader's own) and,
    // on a Cluster, by slot; then cut into that renewer's batch size.
    const groups = new Map<Renewer, Map<string, Renewable[]>>();
    for (const hold of this.#holds) {
      if (!this.renews(hold) || this.#renewing.has(hold)) continue;
      let bySlot = groups.get(hold.renewer);
      if (!bySlot) groups.set(hold.renewer, (bySlot = new Map()));
      const slot = `${this.#slotOf ? this.#slotOf(hold.key) : 0}:${this.#leaseOf(hold)}`;
      const group = bySlot.get(slot);
      if (group) group.push(hold);
      else bySlot.set(slot, [hold]);
    }
    for (const [renewer, bySlot] of groups) {
      for (const holds of bySlot.values()) {
        const leaseMs = this.#leaseOf(holds[0]!);
        for (let i = 0; i < holds.length; i += renewer.batch) this.#send(renewer, holds.slice(i, i + renewer.batch), sentAt, leaseMs);
      }
    }
  }

  /**
   * One batch's call, in flight on its own until answered or until its bound: then it counts as not
   * renewed this round (reported as ERR_LOCK_UNREACHABLE), its holds go into a later round again, and
   * their releases stop waiting for it. An answer that comes after the bound still counts.
   */
  #send(renewer: Renewer, batch: Renewable[], sentAt: number, leaseMs: number): void {
    let finish!: () => void;
    const settled = new Promise<void>((resolve) => (finish = resolve));
    const call: Call = { holds: batch, settled, finish, timer: undefined };
    this.#calls.add(call);
    for (const hold of batch) this.#renewing.set(hold, call);
    const boundMs = renewalBoundMs(leaseMs);
    call.timer = this.#clock.setTimeout(() => {
      if (!this.#settle(call)) return;
      const names = batch.map((hold) => `"${hold.name}"`);
      const what = names.length === 1 ? `hold ${names[0]}` : `${names.length} holds (${names.slice(0, 3).join(', ')}${names.length > 3 ? ', ...' : ''})`;
      log('renewal of %d holds unanswered after %d ms', batch.length, boundMs);
      this.#onError(
        new LockError(`Redis could not be reached: no answer to the renewal of ${what} within ${boundMs} ms; tried again next round`, {
          code: 'ERR_LOCK_UNREACHABLE',
          lockName: batch.length === 1 ? batch[0]!.name : undefined,
        }),
      );
    }, boundMs);
    // Only a hold held when its renewal was sent can be lost by it: on a Redlock client an acquire still
    // out may be decided before this renewal's replies are in, and they tell nothing of that hold.
    const heldAtSend = batch.map((hold) => hold.held);
    let renewal: Promise<boolean[]>;
    try {
      renewal = renewer.renew(batch, leaseMs);
    } catch (error) {
      renewal = Promise.reject(error);
    }
    renewal.then(
      (renewed) => {
        this.#renewed(batch, renewed, heldAtSend, sentAt, leaseMs);
        this.#settle(call);
      },
      (error: unknown) => {
        log('renewal of %d holds failed: %s', batch.length, (error as Error).message);
        // Past its bound, the failure was reported then.
        if (this.#settle(call)) this.#onError(error as Error);
      },
    );
  }

  /** Ends a call's time in flight (answered, past its bound, or stopped); false when it had ended already. */
  #settle(call: Call): boolean {
    if (!this.#calls.delete(call)) return false;
    this.#clock.clearTimeout(call.timer);
    for (const hold of call.holds) if (this.#renewing.get(hold) === call) this.#renewing.delete(hold);
    call.finish();
    return true;
  }

  /** Applies a batch's answer: a new deadline where renewed, a loss where the hold was found gone. */
  #renewed(batch: readonly Renewable[], renewed: readonly boolean[], heldAtSend: readonly boolean[], sentAt: number, leaseMs: number): void {
    if (diagnostics.renew.hasSubscribers) {
      diagnostics.renew.publish({ clientId: this.#clientId, names: batch.filter((_, i) => renewed[i]).map((hold) => hold.name) } satisfies RenewMessage);
    }
    batch.forEach((hold, i) => {
      if (!this.#holds.has(hold) || !this.renews(hold)) return;
      if (renewed[i]) {
        // Never earlier: an answer past its bound may land after a later call's.
        this.#extend(this.#record(hold), hold, sentAt, leaseMs);
        this.#wakeBy(this.#due(hold));
      } else if (heldAtSend[i] && hold.held) {
        this.lose(hold, new LockLostError(`Lock "${hold.name}" expired or was force-unlocked while held`, { lockName: hold.name }));
      }
    });
  }
}
