// One call of a fair waiter: an acquire script call (a try, or a join of the queue), and owning a
// grant it was offered (on receipt when its claim provably lasts, else after a confirm).
import type { AcquireTraceContext } from '../diagnostics.ts';
import { LockLostError } from '../errors.ts';
import { LeaseImpl } from '../lease.ts';
import type { Hold, HoldScripts } from '../runtime/hold.ts';
import { LEAVE_WAIT_MS, settledWithin } from '../runtime/waits.ts';
import type { Grant } from './grants.ts';
import type { FairLockKeys } from './keys.ts';
import type { FairShared } from './shared.ts';


/** What one fair wait needs: the lock's shared state and keys, its name, and the acquire's options. */
export interface FairWait {
  readonly shared: FairShared;
  readonly keys: FairLockKeys;
  readonly name: string;
  readonly scripts: HoldScripts;
  readonly waitMs: number;
  /** A fixed lease; undefined: the watchdog's. */
  readonly leaseMs: number | undefined;
  /** The acquire's tracing context, when someone listens: a join sets its `queuedAt`. */
  readonly trace?: AcquireTraceContext | undefined;
}

function leaseOf(w: FairWait, hold: Hold): LeaseImpl {
  const { runtime } = w.shared;
  return new LeaseImpl(hold, 1, 'fair-lock', runtime.clientId, runtime.closed);
}

/** One acquire script call: the lease, or 'busy' (in 'wait' mode: queued), or 'late' (given back). */
export async function attempt(w: FairWait, hold: Hold, mode: 'try' | 'wait'): Promise<LeaseImpl | 'busy' | 'late'> {
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
    // Queued: when, on the Redis clock (the order the lock serves in).
    if (mode === 'wait' && w.trace) w.trace.queuedAt = outcome.atMs;
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
export async function claim(w: FairWait, hold: Hold, grant: Grant, stop: AbortSignal): Promise<LeaseImpl | undefined> {
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
    const confirmed = hold.serially(() => commands.confirm(w.keys, hold.owner, leaseMs)).then(
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
