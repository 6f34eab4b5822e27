// One attempt for a fresh hold, the same for every kind that takes one (the lock on any topology,
// the semaphore, both read-write sides): renewal registered while the call is out, the hold taken
// with its token, replica sync, and the validity check. What differs is the kind's script call.
import type { LockKind } from '../diagnostics.ts';
import { LeaseImpl } from '../lease.ts';
import type { Attempt } from './acquire.ts';
import type { Hold } from './hold.ts';
import type { Runtime } from './runtime.ts';
import { noop } from './waits.ts';

/** What a kind's script call made of one attempt: taken, with its token; or held, and when to try again. */
export type TakeOutcome = { readonly kind: 'acquired'; readonly token: number } | { readonly kind: 'busy'; readonly retryMs: number };

/**
 * Runs one attempt of `hold` (a fresh owner) for a lease of `leaseMs`. `call` is the kind's script
 * call; when it throws, it has given back whatever the attempt may have taken (no answer is not
 * "not taken"). A busy answer is never this attempt's own hold: a second run of its script (a
 * resend) answers "acquired".
 */
export async function attemptHold(runtime: Runtime, hold: Hold, leaseMs: number, kind: LockKind, call: () => Promise<TakeOutcome>): Promise<Attempt<LeaseImpl>> {
  const { watchdog } = runtime;
  // Renewal is registered before the acquire is sent, and only while an attempt is out: a waiter
  // between attempts holds nothing to renew.
  if (hold.renewable) watchdog.add(hold);
  const sentAt = watchdog.clock.now();
  let outcome: TakeOutcome;
  try {
    outcome = await call();
  } catch (error) {
    watchdog.delete(hold);
    throw error;
  }
  if (outcome.kind === 'busy') {
    watchdog.delete(hold);
    return outcome;
  }
  hold.acquired(outcome.token, sentAt, leaseMs);
  // Replica sync: not handed out before enough replicas have it (a failover could forget it).
  await hold.replicated();
  // Validity: the lease less the time the reply took (on a quorum, less the clock drift too).
  if (watchdog.clock.now() >= hold.deadline) {
    // The reply came so late that the lease it began may be over already: never hand out a lost
    // lease, and give it back before trying again (an acquire that ends here leaves nothing behind).
    await hold.giveBack().catch(noop);
    return { kind: 'late' };
  }
  return { kind: 'acquired', value: new LeaseImpl(hold, 1, kind, runtime.clientId, runtime.closed) };
}
