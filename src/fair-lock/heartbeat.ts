// One heartbeat per client per lock with waiters, every H: it keeps their queue entries alive
// (an entry lives D past its client's last heartbeat), re-queues the ones that were dropped while
// this client could not be reached, pumps a lock whose holder expired (nothing is published then),
// and reports grants whose message was lost.
import { debuglog } from 'node:util';
import type { Clock } from '../runtime/waiter.ts';
import type { FairLockCommands } from './commands.ts';
import type { FairWaiters } from './grants.ts';
import type { FairLockKeys } from './keys.ts';
import type { FairSettings } from './settings.ts';

const log = debuglog('relock:fair-lock');

export interface HeartbeatInit {
  readonly keys: FairLockKeys;
  readonly commands: FairLockCommands;
  readonly waiters: FairWaiters;
  readonly settings: FairSettings;
  readonly clock: Clock;
  readonly onError: (error: Error) => void;
  /** Called when the last owner left: the heartbeat drops itself from its registry. */
  readonly onEmpty: () => void;
}

export class Heartbeat {
  readonly #init: HeartbeatInit;
  readonly #owners = new Set<string>();
  #timer: unknown;
  #inFlight = false;
  /** Another beat was asked for while one was out. */
  #again = false;

  constructor(init: HeartbeatInit) {
    this.#init = init;
  }

  add(owner: string): void {
    this.#owners.add(owner);
    if (this.#timer === undefined && !this.#inFlight) this.#schedule(this.#init.settings.heartbeatMs);
  }

  /** Stops beating for `owner`: call it before anything that ends its wait (its `leave`) is sent. */
  delete(owner: string): void {
    this.#owners.delete(owner);
    if (this.#owners.size > 0) return;
    this.#init.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#init.onEmpty();
  }

  /** Beats at once (grant messages may have been lost: the subscriber reconnected). */
  soon(): void {
    if (this.#inFlight) {
      this.#again = true;
      return;
    }
    this.#init.clock.clearTimeout(this.#timer);
    this.#schedule(0);
  }

  #schedule(ms: number): void {
    this.#timer = this.#init.clock.setTimeout(() => {
      this.#timer = undefined;
      void this.#beat();
    }, ms);
  }

  async #beat(): Promise<void> {
    const { commands, keys, waiters, settings } = this.#init;
    const owners = [...this.#owners];
    if (owners.length === 0) return;
    this.#inFlight = true;
    this.#again = false;
    try {
      const batches: Promise<void>[] = [];
      for (let i = 0; i < owners.length; i += settings.heartbeatBatch) {
        const batch = owners.slice(i, i + settings.heartbeatBatch);
        batches.push(
          // Asked again if the script is sent again (NOSCRIPT): an owner deleted meanwhile had its
          // `leave` sent, or its lease handed out, and must not be queued again behind that.
          commands.heartbeat(keys, batch, (owner) => this.#owners.has(owner)).then((states) => {
            for (const state of states) if (state.kind === 'granted') waiters.offer(state.grant);
          }),
        );
      }
      await Promise.all(batches);
    } catch (error) {
      log('heartbeat of %d waiters on %s failed: %s', owners.length, keys.lock, (error as Error).message);
      this.#init.onError(error as Error);
    } finally {
      this.#inFlight = false;
      if (this.#owners.size > 0 && this.#timer === undefined) this.#schedule(this.#again ? 0 : settings.heartbeatMs);
    }
  }
}
