// The fair lock: the same Lock as lock(), served in the order waiters started waiting across every
// process, with the lock handed directly to the head of the queue on release.
import type { Lease } from '../api.ts';
import type { AcquireTraceContext } from '../diagnostics.ts';
import { LockBase } from '../lock-base.ts';
import { frame, LEAVE_WAIT_MS } from '../runtime/acquire.ts';
import type { HoldScripts } from '../runtime/hold.ts';
import { fairLockKeys, type FairLockKeys } from './keys.ts';
import type { FairShared } from './shared.ts';
import { fairWait } from './wait.ts';


export class FairLockImpl extends LockBase<FairLockKeys> {
  readonly #shared: FairShared;
  readonly #keys: FairLockKeys;
  readonly #scripts: HoldScripts;

  constructor(shared: FairShared, prefix: string, name: string) {
    const keys = fairLockKeys(prefix, name);
    super(shared.runtime, 'fair-lock', name, keys, shared.commands);
    this.#shared = shared;
    this.#keys = keys;
    const { commands, waiters } = shared;
    this.#scripts = {
      release: async (hold, believed, whole) => {
        const outcome = await commands.release(keys, hold.owner, believed, whole, hold.token);
        // A grantee of this very client starts on this reply, before its message arrives.
        if (outcome.kind === 'released' && outcome.grant) waiters.offer(outcome.grant);
        return outcome;
      },
      reenter: (hold, believed, leaseMs) => commands.reenter(keys, hold.owner, believed, leaseMs),
    };
  }

  protected async takeFresh(waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined, trace?: AcquireTraceContext): Promise<Lease> {
    const { runtime } = this.#shared;
    const wait = { shared: this.#shared, keys: this.#keys, name: this.name, scripts: this.#scripts, waitMs, leaseMs, trace };
    const taken = await frame(runtime, {
      name: this.name,
      waitMs,
      signal,
      wait: (stop, state) => fairWait(wait, stop, state),
      // Through the hold, not the lease: a lease refuses to release once the client is closed, but
      // a Redis connection passed in is still open, and the lock must not stay taken by nobody.
      giveBack: ({ hold }) => void hold.giveBack().catch(() => undefined),
      // A rejected acquire waits briefly for its `leave` to be answered, so that the waiter is out of
      // the queue, and a grant it got meanwhile handed on, once acquire() has rejected.
      settleMs: LEAVE_WAIT_MS,
    });
    return taken.lease;
  }
}
