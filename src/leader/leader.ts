// Leader election: a term is a hold of the election's key (a lock that is never re-entered), taken
// by campaign-3.lua with who leads and since when, renewed by the watchdog with the election's lease,
// and ended by the lock's release script; each change is published for the observers (observe.ts).
import { hostname } from 'node:os';
import type { Election, LeaderInfo, Leadership } from '../api.ts';
import { traceAcquire } from '../diagnostics.ts';
import { LockError, LockNotHeldError } from '../errors.ts';
import type { LeaseImpl } from '../lease.ts';
import type { CampaignOptions, ObserveOptions } from '../options.ts';
import { acquire, type Attempt } from '../runtime/acquire.ts';
import { attemptHold } from '../runtime/attempt.ts';
import { Hold, type HoldScripts } from '../runtime/hold.ts';
import type { Renewer } from '../runtime/renewable.ts';
import type { Runtime } from '../runtime/runtime.ts';
import type { WakeRule } from '../runtime/waiting.ts';
import { checkMs, checkOptions, checkSignal, checkWaitMs, MIN_WATCHDOG_LEASE_MS } from '../validate.ts';
import { LeaderCommands, parseChange } from './commands.ts';
import { leaderKeys, type LeaderKeys } from './keys.ts';
import { observeElection } from './observe.ts';

/** What every election of one client shares: its runtime, its commands, and the renewer of its terms. */
export interface LeaderShared {
  readonly runtime: Runtime;
  readonly commands: LeaderCommands;
  readonly renewer: Renewer;
}

/** `renewer`: the lock's (a term is renewed as a lock hold is: its owner field in a hash). */
export function createLeaderShared(runtime: Runtime, renewer: Renewer): LeaderShared {
  return { runtime, commands: new LeaderCommands(runtime.runner, runtime.publish, runtime.leaseMs), renewer };
}

/** An election's options, checked. */
export interface LeaderSettings {
  readonly candidate: string;
  readonly leaseMs: number | undefined;
}

const DEFAULT_CANDIDATE = `${hostname()}:${process.pid}`;

/** The options of `leader(name, options)`, checked before any I/O. */
export function checkLeaderOptions(options: unknown): LeaderSettings {
  const o = checkOptions('leader()', options, ['candidate', 'leaseMs']);
  const { candidate = DEFAULT_CANDIDATE } = o;
  if (typeof candidate !== 'string' || candidate === '') throw new TypeError(`Expected \`candidate\` to be a non-empty string, got ${typeof candidate === 'string' ? 'an empty string' : typeof candidate}`);
  if (candidate.length > 1024) throw new RangeError(`Expected \`candidate\` of at most 1024 characters, got ${candidate.length}`);
  return { candidate, leaseMs: checkMs('leaseMs', o.leaseMs, MIN_WATCHDOG_LEASE_MS) };
}

/** Campaigners wake when a term ends (a resignation), not when one begins. */
const wakeOnEnd: WakeRule = (queue, message) => {
  if (parseChange(message)?.kind !== 'elected') queue[0]?.wake();
};

export class ElectionImpl implements Election {
  readonly name: string;
  readonly #shared: LeaderShared;
  readonly #keys: LeaderKeys;
  readonly #settings: LeaderSettings;
  readonly #scripts: HoldScripts;

  constructor(shared: LeaderShared, prefix: string, name: string, settings: LeaderSettings) {
    this.name = name;
    this.#shared = shared;
    this.#keys = leaderKeys(prefix, name);
    this.#settings = settings;
    const keys = this.#keys;
    this.#scripts = { release: (hold) => shared.commands.resign(keys, hold.owner, hold.token) };
  }

  campaign(options?: CampaignOptions): Promise<Leadership> {
    try {
      const o = checkOptions('campaign()', options, ['waitMs', 'signal']);
      const waitMs = checkWaitMs(o.waitMs);
      const signal = checkSignal(o.signal);
      const { runtime } = this.#shared;
      const leaseMs = this.#settings.leaseMs ?? runtime.leaseMs;
      const who = { name: this.name, kind: 'leader', clientId: runtime.clientId, traits: runtime.traits } as const;
      let since = 0;
      return traceAcquire(who, false, () =>
        acquire(runtime, {
          name: this.name,
          waitMs,
          signal,
          channel: this.#keys.channel,
          rule: wakeOnEnd,
          need: 1,
          key: this.#keys.lock,
          leaseMs,
          attempt: () => this.#attempt(leaseMs, (at) => (since = at)),
          giveBack: (lease) => lease.giveBack(),
          // Two candidates of one process wait for each other by design: no `await using` trap.
          warnsSelfWait: false,
        }),
      ).then((lease) => new LeadershipImpl(lease.keep(), this.#settings.candidate, since, runtime.closed));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** One attempt for a fresh term (a new owner each time); `elected` hears its start. */
  #attempt(leaseMs: number, elected: (since: number) => void): Promise<Attempt<LeaseImpl>> {
    const { runtime, commands, renewer } = this.#shared;
    const keys = this.#keys;
    const hold = new Hold(runtime, { name: this.name, key: keys.lock, renewer, scripts: this.#scripts, renewable: true, renewLeaseMs: this.#settings.leaseMs });
    return attemptHold(runtime, hold, leaseMs, 'leader', {
      call: () =>
        commands.campaign(keys, hold.owner, this.#settings.candidate, leaseMs).then((outcome) => {
          if (outcome.kind === 'acquired') elected(outcome.since);
          return outcome;
        }),
      giveBack: () => commands.resign(keys, hold.owner, 0),
    });
  }

  async current(): Promise<LeaderInfo | null> {
    const read = await this.#shared.commands.inspect(this.#keys);
    return read.kind === 'leading' ? read.leader : null;
  }

  observe(options?: ObserveOptions): AsyncIterable<LeaderInfo | null> {
    const o = checkOptions('observe()', options, ['signal']);
    const signal = checkSignal(o.signal);
    const { runtime, commands } = this.#shared;
    return { [Symbol.asyncIterator]: () => observeElection(runtime, commands, this.#keys, signal) };
  }
}

class LeadershipImpl implements Leadership {
  readonly candidate: string;
  readonly epoch: number;
  readonly since: number;
  readonly #lease: LeaseImpl;
  readonly #closed: AbortSignal;
  readonly #controller = new AbortController();

  constructor(lease: LeaseImpl, candidate: string, since: number, closed: AbortSignal) {
    this.#lease = lease;
    this.#closed = closed;
    this.candidate = candidate;
    this.epoch = lease.fencingToken;
    this.since = since;
    const lost = lease.signal;
    if (lost.aborted) this.#controller.abort(lost.reason);
    else lost.addEventListener('abort', () => this.#controller.abort(lost.reason), { once: true });
  }

  get signal(): AbortSignal {
    // The lease's signal checks the term's deadline against the clock when read (after a pause, before
    // the watchdog's timer ran): its abort reaches this one at once.
    void this.#lease.signal;
    return this.#controller.signal;
  }

  async resign(): Promise<void> {
    const lease = this.#lease;
    if (lease.released) return;
    // Before any I/O: the leader's work stops first, whatever Redis answers.
    if (!this.#controller.signal.aborted) {
      this.#controller.abort(new LockError(`Leadership of "${lease.name}" (epoch ${this.epoch}) was given up`, { lockName: lease.name, code: 'ERR_LOCK_RESIGNED' }));
    }
    try {
      await lease.release();
    } catch (error) {
      // Lost before: the term is over, as asked (the signal said why).
      if (!(error instanceof LockNotHeldError)) throw error;
    }
  }

  /** Resigns, unless the client was closed (the term then ends with its lease). */
  async [Symbol.asyncDispose](): Promise<void> {
    if (!this.#closed.aborted) await this.resign();
  }
}
