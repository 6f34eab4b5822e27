// Typed wrappers of the latch's Lua scripts: every reply gets a name here.
import * as lua from '../generated/latch.ts';
import { defineScript, type ScriptRunner } from '../runtime/script.ts';
import type { LatchKeys } from './keys.ts';

/** A latch's count now, and how long it lives (-1: no time to live; -2: not set). */
export interface LatchState {
  readonly count: number;
  readonly pttl: number;
}

const trySetCount = defineScript(lua.trySetCount, (reply) => Number(reply) === 1);
const countDown = defineScript(lua.countDown, (reply) => Number(reply), 2);
const inspect = defineScript(lua.inspect, (reply): LatchState => {
  const [count, pttl] = reply as [number, number];
  return { count: Number(count), pttl: Number(pttl) };
});

export class LatchCommands {
  readonly #runner: ScriptRunner;
  readonly #publish: string;

  constructor(runner: ScriptRunner, publish: string) {
    this.#runner = runner;
    this.#publish = publish;
  }

  /** True when set; false when the latch was set already. `ttlMs` 0: no time to live. */
  trySetCount(keys: LatchKeys, count: number, ttlMs: number): Promise<boolean> {
    return this.#runner.run(trySetCount, [keys.latch, keys.done], [count, ttlMs]);
  }

  /** The count after this count-down; `id` makes a resent call count once. */
  countDown(keys: LatchKeys, id: string): Promise<number> {
    return this.#runner.run(countDown, [keys.latch, keys.done, keys.channel], [id, this.#publish, 'open']);
  }

  inspect(keys: LatchKeys): Promise<LatchState> {
    return this.#runner.run(inspect, [keys.latch], []);
  }
}
