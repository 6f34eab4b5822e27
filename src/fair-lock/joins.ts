// The waiters of one client that are ready to join a lock's queue in the same tick (one drain of the
// microtask queue)
// join with one script call, in the order they asked (a herd of waiters in one process costs one
// join, not one each).
import type { AcquireOutcome, FairLockCommands } from './commands.ts';
import type { FairLockKeys } from './keys.ts';

interface Pending {
  readonly owner: string;
  readonly resolve: (outcome: AcquireOutcome) => void;
  readonly reject: (error: unknown) => void;
}

export class Joins {
  readonly #commands: FairLockCommands;
  /** Lock key and lease -> the joins of this turn. */
  readonly #batches = new Map<string, Pending[]>();

  constructor(commands: FairLockCommands) {
    this.#commands = commands;
  }

  /** Queues `owner` (or takes the lock for it when it is free with an empty queue), batched with this turn's other joins. */
  join(keys: FairLockKeys, owner: string, leaseMs: number): Promise<AcquireOutcome> {
    const id = `${leaseMs}:${keys.lock}`;
    let batch = this.#batches.get(id);
    if (!batch) {
      const created: Pending[] = (batch = []);
      this.#batches.set(id, created);
      process.nextTick(() => {
        this.#batches.delete(id);
        this.#commands.acquire(
          keys,
          created.map((p) => p.owner),
          leaseMs,
          'wait',
        ).then(
          (outcomes) => created.forEach((p, i) => p.resolve(outcomes[i]!)),
          (error: unknown) => created.forEach((p) => p.reject(error)),
        );
      });
    }
    return new Promise((resolve, reject) => batch.push({ owner, resolve, reject }));
  }
}
