// The semaphore in the Redisson layout: Redisson's RPermitExpirableSemaphore keys (the count of
// available permits `<name>`, the permit expiries `{<name>}:timeout`, the channel
// `redisson_sc:{<name>}`), a relock lease of n permits being n permit ids "<owner>:1".."<owner>:n".
import * as lua from '../generated/semaphore.ts';
import { toToken } from '../lock/commands.ts';
import type { ReleaseOutcome } from '../runtime/hold.ts';
import type { Renewable } from '../runtime/renewable.ts';
import { defineScript, type ScriptRunner } from '../runtime/script.ts';
import { redissonPrefixed, redissonSuffixed } from '../runtime/slot.ts';
import { busyFor, type AvailableOutcome, type SemaphoreAcquireOutcome, type SemaphoreTopology } from './commands.ts';
import type { SemaphoreKeys } from './keys.ts';

/** RPermitExpirableSemaphore's keys of `name`, and relock's token counter beside them (Redisson's semaphore has no tokens). */
export function redissonSemaphoreKeys(name: string): SemaphoreKeys {
  return { name, sem: name, leases: redissonSuffixed(name, 'timeout'), fence: redissonSuffixed(name, 'fence'), channel: redissonPrefixed('redisson_sc', name) };
}

const pair = (reply: unknown) => reply as [number, number | string];
const acquire = defineScript(lua.redissonAcquire, pair, 3);
const available = defineScript(lua.redissonAvailable, (reply): AvailableOutcome => {
  const [flag, value] = pair(reply);
  return flag < 0 ? { kind: 'mismatch', limit: Number(value) } : { kind: 'available', permits: Number(value) };
});
const release = defineScript(lua.redissonRelease, (reply): ReleaseOutcome => (Number(reply) < 0 ? { kind: 'gone' } : { kind: 'released', left: 0 }), 2);
const renew = defineScript(lua.redissonRenew, (reply) => (reply as number[]).map((flag) => flag === 1));

/** The semaphore's commands over RPermitExpirableSemaphore's keys, on one server or a Cluster. */
export class RedissonSemaphoreCommands implements SemaphoreTopology {
  readonly #runner: ScriptRunner;
  readonly #publish: string;

  constructor(runner: ScriptRunner, publish: string) {
    this.#runner = runner;
    this.#publish = publish;
  }

  async acquire(keys: SemaphoreKeys, owner: string, permits: number, limit: number, leaseMs: number): Promise<SemaphoreAcquireOutcome> {
    const [flag, value] = await this.#runner.run(acquire, [keys.sem, keys.leases, keys.fence, keys.channel], [owner, permits, limit, leaseMs, this.#publish]);
    if (flag === 1) return { kind: 'acquired', token: toToken(value, keys.fence) };
    return flag === 0 ? busyFor(Number(value)) : { kind: 'mismatch', limit: Number(value) };
  }

  release(keys: SemaphoreKeys, owner: string): Promise<ReleaseOutcome> {
    return this.#runner.run(release, [keys.sem, keys.leases, keys.channel], [owner, this.#publish]);
  }

  available(keys: SemaphoreKeys, limit: number): Promise<AvailableOutcome> {
    return this.#runner.run(available, [keys.sem, keys.leases, keys.channel], [limit, this.#publish]);
  }

  renew(leases: readonly Renewable[], leaseMs: number): Promise<boolean[]> {
    return this.#runner.run(
      renew,
      leases.flatMap((lease) => [lease.key, redissonSuffixed(lease.key, 'timeout')]),
      [leaseMs, ...leases.map((lease) => lease.owner)],
    );
  }
}
