// Reentrancy: the async context maps each key to the hold the current context has on it. A scope is
// copied on entry, so siblings inside one context never share a nested hold.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Hold } from './hold.ts';

export class Context {
  readonly #storage = new AsyncLocalStorage<ReadonlyMap<string, Hold>>();

  /** The hold the current context has on `key`, while it has one. */
  find(key: string): Hold | undefined {
    const hold = this.#storage.getStore()?.get(key);
    return hold && hold.count > 0 ? hold : undefined;
  }

  /** Runs `fn` in a scope that adds `hold` under `key` to the current one. */
  run<T>(key: string, hold: Hold, fn: () => T | Promise<T>): Promise<T> {
    const scope = new Map(this.#storage.getStore());
    scope.set(key, hold);
    return this.#storage.run(scope, async () => fn());
  }
}
