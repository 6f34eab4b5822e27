// Typed wrappers of the semaphore's Lua scripts: every reply gets a name here, so nothing above
// compares raw numbers.
import * as lua from '../generated/semaphore.ts';
import { toToken } from '../lock/commands.ts';
import type { ReleaseOutcome } from '../runtime/hold.ts';
import { defineScript, type ScriptRunner } from '../runtime/script.ts';
import type { Renewable } from '../runtime/renewable.ts';
import { leasesOf, type SemaphoreKeys } from './keys.ts';

/** What an attempt got: a lease's token, too few permits (retry within `retryMs`, -1: unknown), or another limit stored. */
export type SemaphoreAcquireOutcome =
  | { readonly kind: 'acquired'; readonly token: number }
  | { readonly kind: 'busy'; readonly retryMs: number }
  | { readonly kind: 'mismatch'; readonly limit: number };

/** Free permits now, or another limit stored. */
export type AvailableOutcome = { readonly kind: 'available'; readonly permits: number } | { readonly kind: 'mismatch'; readonly limit: number };

const pair = (reply: unknown) => reply as [number, number | string];

/**
 * Too few permits, the earliest lease ending in `endsInMs` on Redis's clock (-1: none known): retry
 * a millisecond after it (a Node timer may fire up to one early against Redis's clock).
 */
export const busyFor = (endsInMs: number): SemaphoreAcquireOutcome => ({ kind: 'busy', retryMs: endsInMs >= 0 ? endsInMs + 1 : -1 });
const acquire = defineScript(lua.acquire, pair, 3);
const available = defineScript(lua.available, (reply): AvailableOutcome => {
  const [flag, value] = pair(reply);
  return flag < 0 ? { kind: 'mismatch', limit: Number(value) } : { kind: 'available', permits: Number(value) };
});
const release = defineScript(
  lua.release,
  (reply): ReleaseOutcome => (Number(reply) < 0 ? { kind: 'gone' } : { kind: 'released', left: 0 }),
  2,
);
const renew = defineScript(lua.renew, (reply) => (reply as number[]).map((flag) => flag === 1));

/** The semaphore's commands on its topology and layout (a Redlock quorum's, relock.ts's, Redisson's). */
export interface SemaphoreTopology {
  acquire(keys: SemaphoreKeys, owner: string, permits: number, limit: number, leaseMs: number, fenceTtlMs: number): Promise<SemaphoreAcquireOutcome>;
  /** Gives a lease's permits back, whatever their number (the script knows it). */
  release(keys: SemaphoreKeys, owner: string): Promise<ReleaseOutcome>;
  available(keys: SemaphoreKeys, limit: number): Promise<AvailableOutcome>;
  /** One flag per lease, in order: true where it was still live and got a new end. */
  renew(leases: readonly Renewable[], leaseMs: number): Promise<boolean[]>;
}

export class SemaphoreCommands implements SemaphoreTopology {
  readonly #runner: ScriptRunner;
  readonly #publish: string;

  constructor(runner: ScriptRunner, publish: string) {
    this.#runner = runner;
    this.#publish = publish;
  }

  async acquire(keys: SemaphoreKeys, owner: string, permits: number, limit: number, leaseMs: number, fenceTtlMs: number): Promise<SemaphoreAcquireOutcome> {
    const [flag, value] = await this.#runner.run(
      acquire,
      [keys.sem, keys.leases, keys.fence, keys.channel],
      [owner, permits, limit, leaseMs, Math.max(fenceTtlMs, leaseMs), this.#publish],
    );
    if (flag === 1) return { kind: 'acquired', token: toToken(value, keys.fence) };
    return flag === 0 ? busyFor(Number(value)) : { kind: 'mismatch', limit: Number(value) };
  }

  /** Gives a lease's permits back, whatever their number (the script knows it). */
  release(keys: SemaphoreKeys, owner: string): Promise<ReleaseOutcome> {
    return this.#runner.run(release, [keys.sem, keys.leases, keys.channel], [owner, this.#publish]);
  }

  available(keys: SemaphoreKeys, limit: number): Promise<AvailableOutcome> {
    return this.#runner.run(available, [keys.sem, keys.leases], [limit]);
  }

  /** One flag per lease, in order: true where it was still live and got a new end. */
  renew(leases: readonly Renewable[], leaseMs: number): Promise<boolean[]> {
    return this.#runner.run(
      renew,
      leases.flatMap((lease) => [lease.key, leasesOf(lease.key)]),
      [leaseMs, ...leases.map((lease) => lease.owner)],
    );
  }
}
