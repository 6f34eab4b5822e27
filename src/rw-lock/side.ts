// One side of a read-write lock, a Lock of its own: the read side (shared) or the write side
// (exclusive). Re-entry, tracing, tryAcquire and runExclusive come from LockBase; this file takes a
// fresh hold: the upgrade check, the downgrade, the attempt, and the two ways of waiting.
import { randomUUID } from 'node:crypto';
import type { Lease } from '../api.ts';
import { LockError } from '../errors.ts';
import { LeaseImpl } from '../lease.ts';
import { LockBase } from '../lock-base.ts';
import { acquire, LEAVE_WAIT_MS, noop, settledWithin, type Attempt, type WaitWords } from '../runtime/acquire.ts';
import { attemptHold } from '../runtime/attempt.ts';
import { Hold, type HoldScripts } from '../runtime/hold.ts';
import { wakeAll, wakeHead } from '../runtime/waiting.ts';
import type { RwSideKeys } from './keys.ts';
import type { RwShared } from './shared.ts';

/**
 * The readers' room: every reader was woken (no hand-on), and the channel stays subscribed a while
 * after the last reader left, so that the next wait finds it listening (no SUBSCRIBE, one try).
 */
const READERS_ROOM = { handsOn: false, lingerMs: 2_000 } as const;

/** A reader that cannot get in waits for the write side. */
const READ_WORDS: WaitWords = { failed: (name) => `Lock "${name}" was not acquired`, busy: 'it is write-locked' };


export class RwSideImpl extends LockBase<RwSideKeys> {
  readonly #shared: RwShared;
  readonly #keys: RwSideKeys;
  /** The other side's keys: a reader asks whether its context writes (downgrade), a writer whether it reads (upgrade). */
  readonly #other: RwSideKeys;
  readonly #scripts: HoldScripts;

  constructor(shared: RwShared, name: string, keys: RwSideKeys, other: RwSideKeys) {
    super(shared.runtime, keys.side === 'r' ? 'read-lock' : 'write-lock', name, keys, shared.commands);
    this.#shared = shared;
    this.#keys = keys;
    this.#other = other;
    const { commands } = shared;
    const member = (hold: Hold) => `${keys.side}:${hold.owner}`;
    this.#scripts = {
      release: (hold, believed, whole) => commands.release(keys.rw, member(hold), believed, whole, name),
      reenter: (hold, believed, leaseMs) => commands.reenter(keys.rw, member(hold), believed, leaseMs, name),
    };
  }

  protected async takeFresh(waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Lease> {
    const { runtime, commands } = this.#shared;
    const context = runtime.context.find(this.#other.lock);
    if (this.#keys.side === 'w' && context) {
      // Two readers that both wait to upgrade would wait for each other for ever: refused at once.
      throw new LockError(
        `Lock "${this.name}": this async context holds the read lock, and a read lock cannot be upgraded to the write lock; release the read lock first`,
        { lockName: this.name, code: 'ERR_LOCK_UPGRADE' },
      );
    }
    // One id for the whole wait: a writer's intent and a reader's place among the waiting are its.
    const waitId = `${runtime.clientId}:${randomUUID()}`;
    /** The last attempt sent: any attempt may be refused, and so leave an intent or a registration behind. */
    let sent: Promise<unknown> | undefined;
    const attempt = () => {
      const outcome = this.#attempt(leaseMs, waitId, context?.owner ?? '');
      sent = outcome;
      return outcome;
    };
    const { rw, side } = this.#keys;
    const request = {
      name: this.name,
      waitMs,
      signal,
      need: 1,
      leaseMs: leaseMs ?? runtime.leaseMs,
      attempt,
      giveBack: (lease: LeaseImpl) => lease.giveBack(),
    };
    try {
      // A writer waits as a plain lock's waiter does: one local queue, a message wakes its head. Where
      // both sides share one channel (the Redisson layout), a message may be for either: it wakes all.
      if (side === 'w' && rw.toWriters !== rw.toReaders) return await acquire(runtime, { ...request, channel: rw.toWriters, rule: wakeHead, key: this.#keys.lock });
      if (side === 'w') return await acquire(runtime, { ...request, channel: rw.toWriters, rule: wakeAll, key: this.#keys.lock, room: READERS_ROOM });
      // Every waiting reader tries before it sleeps, so that Redis counts it among the waiting readers
      // a write release admits ahead of writers; one message on the readers' channel wakes them all.
      // The self-wait warning asks whether this client holds the write side.
      return await acquire(runtime, { ...request, channel: rw.toReaders, rule: wakeAll, key: this.#other.lock, tries: 'every', room: READERS_ROOM, words: READ_WORDS });
    } catch (error) {
      // A refused writer's intent keeps new readers out, a refused reader may be admitted to a read
      // batch: neither may outlive the wait, also when the wait ended while an attempt was out (its
      // refusal lands after the rejection). `leave` follows the last attempt once that is answered,
      // so it runs after it whatever the connection does (a resend, an EVAL after NOSCRIPT).
      if (sent) {
        const leaving = sent.then(noop, noop).then(() => commands.leave(rw, waitId)).catch(noop);
        // A wait that ended (timeout, abort, close) rejects once the leave is answered, briefly and
        // only while Redis is reachable; a try-once's refusal is its answer, not held up by it.
        if (waitMs !== 0 && runtime.runner.ready) await settledWithin(leaving, LEAVE_WAIT_MS);
      }
      throw error;
    }
  }

  /** One acquire script call for a fresh hold (a new owner each time). */
  #attempt(leaseMs: number | undefined, waitId: string, writeOwner: string): Promise<Attempt<LeaseImpl>> {
    const { runtime, commands, renewer, targets } = this.#shared;
    const { side, rw } = this.#keys;
    const lease = leaseMs ?? runtime.leaseMs;
    const hold = new Hold(runtime, { name: this.name, key: this.#keys.lock, renewer, scripts: this.#scripts, renewable: leaseMs === undefined });
    const member = `${side}:${hold.owner}`;
    targets.set(hold, { rw, member });
    return attemptHold(runtime, hold, lease, side === 'r' ? 'read-lock' : 'write-lock', {
      call: async () => {
        const outcome =
          side === 'r'
            ? await commands.readAcquire(rw, hold.owner, lease, runtime.fenceTtlMs, waitId, writeOwner, this.name)
            : await commands.writeAcquire(rw, hold.owner, lease, runtime.fenceTtlMs, waitId, this.name);
        if (outcome.kind === 'acquired') return outcome;
        // A writer behind readers renews its intent by trying again; otherwise sleep until the hint
        // passes (a lease or an intent ends), a millisecond more.
        const retryMs = outcome.hintMs + 1;
        return { kind: 'busy', retryMs: outcome.intent ? Math.min(retryMs, commands.settings.intentRenewMs) : retryMs };
      },
      giveBack: () => commands.release(rw, member, 1, true, this.name),
    });
  }

}
