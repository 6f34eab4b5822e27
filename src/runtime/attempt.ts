// One attempt for a fresh hold, the same for every kind that takes one (the lock on any topology,
// the semaphore, both read-write sides): renewal registered while the call is out, the hold taken
// with its token, replica sync, and the validity check. What differs is the kind's script call.
import type { LockKind } from '../diagnostics.ts';
import { LeaseImpl } from '../lease.ts';
import type { Attempt } from './acquire.ts';
import type { Hold } from './hold.ts';
import type { Runtime } from './runtime.ts';
import { isNotServing } from './script.ts';
import { isUnreachable } from './wait-errors.ts';

/** What a kind's script call made of one attempt: taken, with its token; or held, and when to try again. */
export type TakeOutcome = { readonly kind: 'acquired'; readonly token: number } | { readonly kind: 'busy'; readonly retryMs: number };

/** A kind's side of one attempt: its script call, and how to give back what an unanswered call may have taken. */
export interface Take {
  /** The kind's script call for the hold's owner. */
  readonly call: () => Promise<TakeOutcome>;
  /** Releases whatever the owner holds (its whole hold); called when `call` got no answer. */
  readonly giveBack: () => Promise<unknown>;
}

/**
 * Runs one attempt of `hold` (a fresh owner) for a lease of `leaseMs`. No answer is not "not taken":
 * the script may still run after a client-side timeout (or on some masters of a quorum), so a call
 * that failed to reach Redis is followed by `take.giveBack()`, sent again until it lands or the lease
 * has ended; the owner is this attempt's alone, so that is safe whatever happened. A busy answer is
 * never this attempt's own hold: a second run of its script (a resend) answers "acquired".
 */
export function attemptHold(runtime: Runtime, hold: Hold, leaseMs: number, kind: LockKind, take: Take): Promise<Attempt<LeaseImpl>> {
  const { watchdog } = runtime;
  // Renewal is registered before the acquire is sent, and only while an attempt is out: a waiter
  // between attempts holds nothing to renew.
  if (hold.renewable) watchdog.add(hold);
  const sentAt = watchdog.clock.now();
  // A plain promise chain, not an async function: this is every acquire's path, and each await costs.
  return take.call().then(
    (outcome): Attempt<LeaseImpl> | Promise<Attempt<LeaseImpl>> => {
      if (outcome.kind === 'busy') {
        watchdog.delete(hold);
        return outcome;
      }
      hold.acquired(outcome.token, sentAt, leaseMs);
      // Replica sync: not handed out before enough replicas have it (a failover could forget it).
      return runtime.replicas === 0 ? valid(runtime, hold, kind) : hold.replicated().then(() => valid(runtime, hold, kind));
    },
    (error: unknown) => {
      watchdog.delete(hold);
      // A node that answered it cannot serve (CLUSTERDOWN, READONLY, ...) ran nothing: nothing to give back.
      if (isUnreachable(error) && !isNotServing(error.cause)) {
        // Whatever the script took ends with its lease at the latest: until then, a give-back that
        // could not be sent (the client is offline) goes again when the connection is back.
        const untilMs = watchdog.clock.now() + leaseMs;
        take.giveBack().catch((failure: unknown) => {
          if (isUnreachable(failure)) runtime.resend(take.giveBack, untilMs);
        });
      }
      throw error;
    },
  );
}

/** The lease of a hold just taken, or 'late' when the reply came after its lease may have ended. */
function valid(runtime: Runtime, hold: Hold, kind: LockKind): Attempt<LeaseImpl> | Promise<Attempt<LeaseImpl>> {
  // Validity: the lease less the time the reply took (on a quorum, less the clock drift too).
  if (runtime.watchdog.clock.now() < hold.deadline) return { kind: 'acquired', value: new LeaseImpl(hold, 1, kind, runtime.clientId, runtime.closed) };
  // The reply came so late that the lease it began may be over already: never hand out a lost
  // lease, and give it back before trying again (an acquire that ends here leaves nothing behind).
  return hold.giveBack().then(
    () => ({ kind: 'late' }) as const,
    () => ({ kind: 'late' }) as const,
  );
}
