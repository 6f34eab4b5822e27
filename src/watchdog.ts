// One timer per client: renews every watched hold in batches, and signals a hold as lost when it
// could not be renewed before its lease would end (or, for a fixed lease, when it ends).
import { debuglog } from 'node:util';
import { LockLostError } from './errors.ts';
import type { LockKeys } from './keys.ts';
import type { Commands } from './scripts.ts';

const log = debuglog('relock:watchdog');

/** Keys per renewal script call. */
const BATCH = 500;

/** What the watchdog needs of a hold. */
export interface Watched {
  readonly name: string;
  readonly keys: LockKeys;
  readonly owner: string;
  /** Renewed by the watchdog (true) or a fixed lease that only ends (false). */
  renewable: boolean;
  /** Whether the acquire went through; a renewal that finds nothing before that is no loss. */
  held: boolean;
  /** performance.now() by which the hold must count as lost. */
  deadline: number;
  lose(error: LockLostError): void;
}

/** How long before the lease ends on Redis the local side gives it up: a tenth, at most a second. */
export function marginMs(leaseMs: number): number {
  return Math.min(1000, Math.floor(leaseMs / 10));
}

export class Watchdog {
  readonly #commands: Commands;
  readonly #leaseMs: number;
  readonly #batch: number;
  readonly #onError: (error: Error) => void;
  readonly #holds = new Set<Watched>();
  /** How many of #holds are renewable: the first one after none starts a renewal period. */
  #renewables = 0;
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Number.POSITIVE_INFINITY;
  #nextRenewalAt = 0;
  #inFlight: Promise<void> | undefined;
  #stopped = false;

  constructor(commands: Commands, leaseMs: number, options: { batch?: number; onError: (error: Error) => void }) {
    this.#commands = commands;
    this.#leaseMs = leaseMs;
    this.#batch = options.batch ?? BATCH;
    this.#onError = options.onError;
  }

  /** Starts watching a hold: renewable ones from now on (before their acquire is sent). */
  add(hold: Watched): void {
    if (this.#stopped) return;
    if (!this.#holds.has(hold)) {
      this.#holds.add(hold);
      if (hold.renewable && this.#renewables++ === 0) this.#nextRenewalAt = performance.now() + this.#leaseMs / 3;
    }
    this.#wakeBy(this.#due(hold));
  }

  /** Sets when the hold counts as lost: the lease that began when its command was sent, less the margin. */
  leaseFrom(hold: Watched, sentAt: number, leaseMs: number): void {
    hold.deadline = sentAt + leaseMs - marginMs(leaseMs);
    this.add(hold);
  }

  /** Moves a fixed lease's deadline later, never earlier (a nested acquire with a longer lease). */
  lengthen(hold: Watched, sentAt: number, leaseMs: number): void {
    hold.deadline = Math.max(hold.deadline, sentAt + leaseMs - marginMs(leaseMs));
  }

  /** Stops renewing the hold but keeps its deadline: it ends as a fixed lease would. */
  stopRenewing(hold: Watched): void {
    if (hold.renewable && this.#holds.has(hold)) this.#renewables--;
    hold.renewable = false;
  }

  /** Stops watching a hold. The timer stays: a tick with nothing to do costs nothing. */
  delete(hold: Watched): void {
    if (this.#holds.delete(hold) && hold.renewable) this.#renewables--;
  }

  lose(hold: Watched, error: LockLostError): void {
    this.delete(hold);
    hold.held = false;
    hold.lose(error);
  }

  /** Every hold of this client on that lock counts as lost now (it was force-unlocked). */
  loseKey(lockKey: string, error: LockLostError): void {
    for (const hold of this.#holds) if (hold.keys.lock === lockKey && hold.held) this.lose(hold, error);
  }

  /** Resolves when no renewal is in flight, so that a release is never followed by a renewal. */
  async settled(): Promise<void> {
    await this.#inFlight;
  }

  stop(error: LockLostError): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    for (const hold of this.#holds) if (hold.held) this.lose(hold, error);
    this.#holds.clear();
    this.#renewables = 0;
  }

  /** When the watchdog must look at this hold next. */
  #due(hold: Watched): number {
    const deadline = hold.held ? hold.deadline : Number.POSITIVE_INFINITY;
    return hold.renewable ? Math.min(deadline, this.#nextRenewalAt) : deadline;
  }

  /** Makes sure the timer fires by `at`: it only ever moves earlier here, in O(1). */
  #wakeBy(at: number): void {
    if (this.#stopped || at >= this.#timerAt) return;
    clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => this.#tick(), Math.max(0, at - performance.now()));
    this.#timer.unref();
  }

  #tick(): void {
    this.#timer = undefined;
    this.#timerAt = Number.POSITIVE_INFINITY;
    const now = performance.now();
    for (const hold of this.#holds) {
      if (hold.held && now >= hold.deadline) {
        this.lose(
          hold,
          new LockLostError(
            hold.renewable
              ? `Lock "${hold.name}" could not be renewed before its lease ended`
              : `Lock "${hold.name}" reached the end of its lease`,
            { lockName: hold.name },
          ),
        );
      }
    }
    if (now >= this.#nextRenewalAt && this.#renewables > 0) {
      this.#nextRenewalAt = now + this.#leaseMs / 3;
      // One renewal at a time: while one hangs (Redis unreachable), the deadlines above still fire.
      if (!this.#inFlight) this.#inFlight = this.#renew(now).finally(() => (this.#inFlight = undefined));
    }
    for (const hold of this.#holds) this.#wakeBy(this.#due(hold));
  }

  async #renew(sentAt: number): Promise<void> {
    const holds = [...this.#holds].filter((hold) => hold.renewable);
    const batches: Watched[][] = [];
    for (let i = 0; i < holds.length; i += this.#batch) batches.push(holds.slice(i, i + this.#batch));
    await Promise.all(
      batches.map(async (batch) => {
        let renewed: boolean[];
        try {
          renewed = await this.#commands.renew(batch, this.#leaseMs);
        } catch (error) {
          log('renewal of %d holds failed: %s', batch.length, (error as Error).message);
          this.#onError(error as Error);
          return;
        }
        batch.forEach((hold, i) => {
          if (!this.#holds.has(hold) || !hold.renewable) return;
          if (renewed[i]) {
            hold.deadline = sentAt + this.#leaseMs - marginMs(this.#leaseMs);
            this.#wakeBy(this.#due(hold));
          } else if (hold.held) {
            this.lose(hold, new LockLostError(`Lock "${hold.name}" expired or was force-unlocked while held`, { lockName: hold.name }));
          }
        });
      }),
    );
  }
}
