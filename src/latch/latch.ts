// The count-down latch (Redisson's RCountDownLatch): a count set once, counted down by anyone, and
// waiters woken by one message when it reaches 0. A wait is the acquire protocol's wait with nothing
// to hold: its attempt reads the count, and "acquired" means open.
import { randomUUID } from 'node:crypto';
import type { CountDownLatch } from '../api.ts';
import type { LatchWaitOptions, TrySetCountOptions } from '../options.ts';
import { acquire, noop, type Attempt, type WaitWords } from '../runtime/acquire.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { wakeAll } from '../runtime/waiting.ts';
import { checkCount, checkMs, checkOptions, checkSignal, checkWaitMs, MAX_TIMER_MS } from '../validate.ts';
import { LatchCommands } from './commands.ts';
import { latchKeys, type LatchKeys } from './keys.ts';

/** What every latch of one client shares. */
export interface LatchShared {
  readonly runtime: Runtime;
  readonly commands: LatchCommands;
}

export function createLatchShared(runtime: Runtime): LatchShared {
  return { runtime, commands: new LatchCommands(runtime.runner, runtime.publish) };
}

const WORDS: WaitWords = { failed: (name) => `Latch "${name}" did not open`, busy: 'its count is above 0' };

export class CountDownLatchImpl implements CountDownLatch {
  readonly name: string;
  readonly #shared: LatchShared;
  readonly #keys: LatchKeys;

  constructor(shared: LatchShared, prefix: string, name: string) {
    this.name = name;
    this.#shared = shared;
    this.#keys = latchKeys(prefix, name);
  }

  async trySetCount(count: number, options?: TrySetCountOptions): Promise<boolean> {
    const checked = checkCount(count);
    const o = checkOptions('trySetCount()', options, ['ttlMs']);
    const ttlMs = checkMs('ttlMs', o.ttlMs, 1, MAX_TIMER_MS) ?? 0;
    return this.#shared.commands.trySetCount(this.#keys, checked, ttlMs);
  }

  countDown(): Promise<number> {
    return this.#shared.commands.countDown(this.#keys, randomUUID());
  }

  async count(): Promise<number> {
    return (await this.#shared.commands.inspect(this.#keys)).count;
  }

  async wait(options?: LatchWaitOptions): Promise<void> {
    const o = checkOptions('wait()', options, ['waitMs', 'signal']);
    const waitMs = checkWaitMs(o.waitMs);
    const signal = checkSignal(o.signal);
    const { runtime, commands } = this.#shared;
    const keys = this.#keys;
    await acquire(runtime, {
      name: this.name,
      waitMs,
      signal,
      channel: keys.channel,
      rule: wakeAll,
      need: 1,
      key: keys.latch,
      leaseMs: runtime.leaseMs,
      words: WORDS,
      attempt: async (): Promise<Attempt<void>> => {
        const { count, pttl } = await commands.inspect(keys);
        if (count === 0) return { kind: 'acquired', value: undefined };
        // Woken by the message at 0; a latch that expires publishes nothing, so a wait sleeps no
        // longer than its time to live, and no longer than a lease (a message lost without a
        // reconnect, say across a Cluster failover, costs that much at most).
        return { kind: 'busy', retryMs: pttl > 0 ? Math.min(pttl + 1, runtime.leaseMs) : runtime.leaseMs };
      },
      giveBack: noop,
    });
  }
}
