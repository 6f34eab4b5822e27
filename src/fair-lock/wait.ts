// A fair waiter's life: try once before listening; subscribe to this client's grant channel; join
// the Redis queue; sleep until a grant is offered (by message, by a release or leave reply of this
// client, or by a heartbeat reply); own it on receipt when its claim provably lasts, else confirm
// first; and when the wait gives up, `leave` (which hands on a grant that arrived meanwhile).
import { debuglog } from 'node:util';
import { LockLostError, LockTimeoutError } from '../errors.ts';
import { LeaseImpl } from '../lease.ts';
import { Hold, type HoldScripts } from '../runtime/hold.ts';
import { backoffMs, isUnreachable, leaseTooShort, MAX_LATE, settledWithin, type WaitState } from '../runtime/acquire.ts';
import { FairWaiter, type Grant } from './grants.ts';
import type { Heartbeat } from './heartbeat.ts';
import { grantChannel, type FairLockKeys } from './keys.ts';
import { heartbeatFor, type FairShared } from './shared.ts';

const log = debuglog('relock:fair-lock');

/** How long a wait that gave up waits for its `leave` to be answered (never while Redis is unreachable). */
const LEAVE_WAIT_MS = 250;


export interface FairWait {
  readonly shared: FairShared;
  readonly keys: FairLockKeys;
  readonly name: string;
  readonly scripts: HoldScripts;
  readonly waitMs: number;
  /** A fixed lease; undefined: the watchdog's. */
  readonly leaseMs: number | undefined;
}

function leaseOf(w: FairWait, hold: Hold): LeaseImpl {
  const { runtime } = w.shared;
  return new LeaseImpl(hold, 1, 'fair-lock', runtime.clientId, runtime.closed);
}

/** One acquire script call: the lease, or 'busy' (in 'wait' mode: queued), or 'late' (given back). */
async function attempt(w: FairWait, hold: Hold, mode: 'try' | 'wait'): Promise<LeaseImpl | 'busy' | 'late'> {
  const { runtime, commands } = w.shared;
  const { watchdog } = runtime;
  const leaseMs = w.leaseMs ?? runtime.leaseMs;
  // Renewal is registered before the acquire is sent, and only while an attempt is out.
  if (hold.renewable) watchdog.add(hold);
  const sentAt = watchdog.clock.now();
  let outcome;
  try {
    outcome = mode === 'wait' ? await w.shared.joins.join(w.keys, hold.owner, leaseMs) : (await commands.acquire(w.keys, [hold.owner], leaseMs, mode))[0]!;
  } catch (error) {
    watchdog.delete(hold);
    throw error;
  }
  if (outcome.kind === 'busy') {
    watchdog.delete(hold);
    return 'busy';
  }
  hold.acquired(outcome.token, sentAt, leaseMs);
  await hold.replicated();
  if (watchdog.clock.now() >= hold.deadline) {
    // The reply came so late that the lease it began may be over already: never hand out a lost
    // lease. The owner queues again after its give-back (on the same connection, answered first).
    await settledWithin(hold.giveBack(), LEAVE_WAIT_MS);
    return 'late';
  }
  return leaseOf(w, hold);
}

/**
 * Owns a grant: on receipt when its claim provably lasts, else only if a confirm finds it still ours.
 * Every grant it is offered was recorded before it was told (the scripts publish only a grant they
 * wrote), so a receipt is never of a grant that went to another.
 */
async function claim(w: FairWait, hold: Hold, grant: Grant, stop: AbortSignal): Promise<LeaseImpl | undefined> {
  const { runtime, commands, redisClock, settings } = w.shared;
  const { watchdog } = runtime;
  const leaseMs = w.leaseMs ?? runtime.leaseMs;
  const sentAt = watchdog.clock.now();
  // The clock of the node that made the grant: the one serving the lock's slot.
  const leftMs = grant.nowMs + grant.claimMs - redisClock.latest(w.keys.lock, sentAt);
  if (stop.aborted) return undefined;
  if (leftMs >= settings.minClaimLeftMs) {
    // The confirm to the full lease is written before the critical section starts (a holder paused
    // after that keeps the lock like any holder); until its reply, the hold ends with the claim.
    // A fresh grant is the newest (a later one needs this claim to end first): its token stands.
    hold.acquired(grant.token, sentAt, Math.min(leftMs, leaseMs));
    const confirmed = commands.confirm(w.keys, hold.owner, leaseMs).then(
      (token) => {
        if (!hold.held || hold.lost) return;
        if (token !== undefined) watchdog.leaseFrom(hold, sentAt, leaseMs);
        else watchdog.lose(hold, new LockLostError(`Lock "${w.name}" was lost before its grant was confirmed`, { lockName: w.name }));
      },
      (error: Error) => runtime.error(error),
    );
    if (runtime.replicas > 0) {
      // Replica sync: the confirm (written on this connection, after the grant) first, then WAIT. A
      // grant the confirm found gone comes back as without replica sync: a lease already lost.
      await confirmed;
      if (!hold.lost) await hold.replicated();
    }
    return leaseOf(w, hold);
  }
  // A grant seen late (a paused process, a slow message): owned only if the owner still holds the
  // lock, under the token the confirm reports (it may have been granted anew since).
  const token = await commands.confirm(w.keys, hold.owner, leaseMs);
  if (token === undefined || stop.aborted) return undefined;
  hold.acquired(token, sentAt, leaseMs);
  await hold.replicated();
  return leaseOf(w, hold);
}

/** A lease and its hold: what a wait that was given up gives back goes through the hold. */
export interface Taken {
  readonly lease: LeaseImpl;
  readonly hold: Hold;
}

/** Waits until this client holds the lock, or `stop` aborts. */
export async function fairWait(w: FairWait, stop: AbortSignal, state: WaitState): Promise<Taken> {
  const { runtime, commands, waiters } = w.shared;
  const { waiting, watchdog } = runtime;
  // The connection of the queue (on a Redlock client, the gate master's): what a resend or a drop concerns.
  const { runner } = w.shared;
  const { keys, name } = w;
  const channel = grantChannel(keys, runtime.clientId);
  const finite = w.waitMs > 0 && w.waitMs !== Number.POSITIVE_INFINITY;
  const startedAt = watchdog.clock.now();
  const init = { name, key: keys.lock, renewer: w.shared.renewer, scripts: w.scripts, renewable: w.leaseMs === undefined };
  let hold = new Hold(runtime, init);
  const waiter = new FairWaiter(hold.owner, watchdog.clock);
  /** Replies in a row that came after the lease they began (a slow network or a paused process). */
  let late = 0;
  /** After a late reply: the same owner queues again with a hold of its own (the given-back one may be lost). */
  const lateAgain = () => {
    if (++late >= MAX_LATE || w.waitMs === 0) throw leaseTooShort(name, late);
    hold = new Hold(runtime, { ...init, owner: hold.owner });
  };
  let heartbeat: Heartbeat | undefined;
  let entered = false;
  /** The owner may be in the queue, or hold a grant it does not know of: `leave` must run. */
  let queued = false;
  let lease: LeaseImpl | undefined;
  let failures = 0;
  const { underWay, placing } = w.shared;
  const contended = (underWay.get(keys.lock) ?? 0) > 0;
  underWay.set(keys.lock, (underWay.get(keys.lock) ?? 0) + 1);
  // This client's acquires of a lock take their places in the queue in the order they started: one
  // that skipped its try must not join before an earlier one still trying.
  let before = placing.get(keys.lock);
  let placed!: () => void;
  const mine = new Promise<void>((resolve) => (placed = resolve));
  placing.set(keys.lock, mine);
  const place = () => {
    placed();
    if (placing.get(keys.lock) === mine) placing.delete(keys.lock);
  };
  try {
    // Never queue before listening (PUBLISH would count this client unreachable): a client not yet
    // subscribed tries once first, unless another acquire of its own on this lock is under way (the
    // lock is contended: it subscribes, then joins); one that is already listening joins at once.
    if (w.waitMs === 0 || (!waiting.listening(channel) && !contended)) {
      const mark = runner.mark();
      queued = true;
      const got = await attempt(w, hold, 'try');
      if (got instanceof LeaseImpl) return { lease: (lease = got), hold };
      // A try that ioredis resent may have taken the lock for this owner the first time.
      queued = runner.maybeResent(mark);
      if (got === 'late') lateAgain();
      if (w.waitMs === 0) throw new LockTimeoutError(`Lock "${name}" was not acquired within 0 ms: it is held`, { lockName: name });
    }
    await waiting.enter(channel, waiter, waiters.rule, name, { handsOn: false, lingerMs: w.shared.settings.keepListeningMs });
    entered = true;
    waiters.add(waiter);
    heartbeat = heartbeatFor(w.shared, keys);
    heartbeat.add(hold.owner);
    let join = true;
    let grant: Grant | undefined;
    for (;;) {
      stop.throwIfAborted();
      grant ??= waiter.take();
      if (grant) {
        const got = await claim(w, hold, grant, stop);
        grant = undefined;
        if (got) return { lease: (lease = got), hold };
        // The claim ended before it was confirmed (this process was paused): queue again.
        join = true;
        continue;
      }
      let sleepMs = runtime.leaseMs;
      if (join) {
        queued = true;
        try {
          if (before) await before;
          before = undefined;
          stop.throwIfAborted();
          // The join is batched with this turn's others as the call is made: the next may follow.
          const joining = attempt(w, hold, 'wait');
          place();
          const got = await joining;
          if (got instanceof LeaseImpl) return { lease: (lease = got), hold };
          if (got === 'late') {
            lateAgain();
            continue;
          }
          late = 0;
          join = false;
          failures = 0;
          state.unreachable = undefined;
        } catch (error) {
          // A finite wait rides out a connection failure until it ends; the others fail fast.
          if (!finite || !isUnreachable(error)) throw error;
          state.unreachable = error;
          sleepMs = backoffMs(failures++);
        }
      }
      await waiter.sleep(sleepMs, stop);
      grant = waiter.take();
      if (grant || join) continue;
      // Woken without a grant: the subscriber reconnected, and grant messages may have been lost.
      if (waiter.nudged()) heartbeat.soon();
      // Or a lease went by: the `await using` trap, if this client itself holds the lock.
      else if (watchdog.clock.now() - startedAt > runtime.leaseMs && watchdog.heldSince(keys.lock, startedAt)) runtime.warnSelfWait(name);
    }
  } finally {
    place();
    const left = underWay.get(keys.lock)! - 1;
    if (left > 0) underWay.set(keys.lock, left);
    else underWay.delete(keys.lock);
    if (entered) {
      waiters.delete(waiter);
      heartbeat?.delete(hold.owner);
      waiting.leave(channel, waiter);
    }
    if (queued && !lease) {
      // Sent after everything this wait sent, on the same connection: it runs after them. The
      // rejection of the acquire waits for it, briefly (see fair-lock.ts, SETTLE_MS).
      const leaving = commands.leave(keys, hold.owner).then(
        (outcome) => outcome.grant && waiters.offer(outcome.grant),
        (error: Error) => log('leave of %s failed: %s', name, error.message),
      );
      if (runner.ready) await settledWithin(leaving, LEAVE_WAIT_MS);
    }
  }
}
