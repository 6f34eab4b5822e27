// The fair lock in the Redisson layout: RFairLock's protocol. RLock's hash, a queue of waiting
// owners with deadlines from the callers' clocks, and a channel per waiter that a release wakes the
// head on. Unlike relock's own fair lock there are no grants and no heartbeats: the head takes the
// lock itself when woken, and a dead waiter holds the queue up until its deadline.
import type { Lease } from '../api.ts';
import type { LeaseImpl } from '../lease.ts';
import { LockBase } from '../lock-base.ts';
import * as lua from '../generated/fair-lock.ts';
import { HashLockReads, reenter, renew, toToken } from '../lock/commands.ts';
import { acquire, isUnreachable, type Attempt } from '../runtime/acquire.ts';
import { attemptHold } from '../runtime/attempt.ts';
import { Hold, releaseOutcome, type HoldScripts } from '../runtime/hold.ts';
import type { Renewer } from '../runtime/renewable.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { defineScript, type ScriptRunner } from '../runtime/script.ts';
import { redissonPrefixed } from '../runtime/slot.ts';
import { wakeHead } from '../runtime/waiting.ts';
import { LEAVE_WAIT_MS, noop, settledWithin } from '../runtime/waits.ts';

/**
 * Redisson's `fairLockWaitTimeout` default: how long a queued waiter may take to come for the lock
 * once it is its turn. Every entry of RFairLock's queue is spaced by it and every acquisition or
 * departure lowers the deadlines behind by it, so relock queues with it whatever its own `waitMs`
 * (another spacing would push Java's deadlines out, or drop relock's entries early).
 */
export const REDISSON_FAIR_WAIT_MS = 300_000;
/** A queued waiter whose lock is free while the head takes it over tries again this soon (Redisson polls at once). */
const TAKEOVER_RETRY_MS = 50;

/** RFairLock's keys of a name. */
export interface RedissonFairKeys {
  readonly lock: string;
  readonly queue: string;
  readonly timeouts: string;
  /** A waiter's own channel is this plus `:<owner>`. */
  readonly channel: string;
  /** RFencedLock's token counter of the name: fair holders' tokens compare with its holders'. */
  readonly fence: string;
}

export function redissonFairKeys(name: string): RedissonFairKeys {
  return {
    lock: name,
    queue: redissonPrefixed('redisson_lock_queue', name),
    timeouts: redissonPrefixed('redisson_lock_timeout', name),
    channel: redissonPrefixed('redisson_lock__channel', name),
    fence: redissonPrefixed('redisson_lock_token', name),
  };
}

const takeScript = defineScript(lua.redissonAcquire, (reply) => reply);
const releaseScript = defineScript(lua.redissonRelease, releaseOutcome, 1);
const leaveScript = defineScript(lua.redissonLeave, (reply) => Number(reply), 3);
const forceScript = defineScript(lua.redissonForceRelease, (reply) => reply === 1, 1);

/** RFairLock's commands (the reads and re-entry are RLock's: the hash is the same). */
export class RedissonFairCommands extends HashLockReads {
  readonly #runner: ScriptRunner;
  readonly #publish: string;

  constructor(runner: ScriptRunner, publish: string) {
    super(runner);
    this.#runner = runner;
    this.#publish = publish;
  }

  /** Taken with its token, or busy (queued unless `queue` is false): how long until it is worth trying again. */
  async take(keys: RedissonFairKeys, owner: string, leaseMs: number, queue: boolean): Promise<{ kind: 'acquired'; token: number } | { kind: 'busy'; ms: number }> {
    const reply = await this.#runner.run(
      takeScript,
      [keys.lock, keys.queue, keys.timeouts, keys.fence],
      [owner, leaseMs, REDISSON_FAIR_WAIT_MS, Date.now(), queue ? 'wait' : 'try'],
    );
    return Array.isArray(reply) ? { kind: 'busy', ms: Number(reply[1]) } : { kind: 'acquired', token: toToken(reply, keys.fence) };
  }

  release(keys: RedissonFairKeys, owner: string, believed: number, whole: boolean) {
    return this.#runner.run(releaseScript, [keys.lock, keys.queue, keys.timeouts, keys.channel], [owner, believed, whole ? 1 : 0, this.#publish, Date.now()]);
  }

  reenter(keys: RedissonFairKeys, owner: string, believed: number, leaseMs: number | undefined) {
    return this.#runner.run(reenter, [keys.lock, keys.fence], [owner, leaseMs ?? 0, believed]);
  }

  leave(keys: RedissonFairKeys, owner: string): Promise<number> {
    return this.#runner.run(leaveScript, [keys.lock, keys.queue, keys.timeouts, keys.channel], [owner, REDISSON_FAIR_WAIT_MS, this.#publish]);
  }

  forceRelease(keys: RedissonFairKeys): Promise<boolean> {
    return this.#runner.run(forceScript, [keys.lock, keys.queue, keys.timeouts, keys.channel], [this.#publish, Date.now()]);
  }
}

/** What every Redisson-layout fair lock of one client shares. */
export interface RedissonFairShared {
  readonly runtime: Runtime;
  readonly commands: RedissonFairCommands;
  readonly renewer: Renewer;
}

export function createRedissonFairShared(runtime: Runtime): RedissonFairShared {
  const commands = new RedissonFairCommands(runtime.runner, runtime.publish);
  const renewer: Renewer = { renew: (batch, leaseMs) => runtime.runner.run(renew, batch.map((hold) => hold.key), [leaseMs, ...batch.map((hold) => hold.owner)]), batch: 500 };
  return { runtime, commands, renewer };
}

/** fairLock() in the Redisson layout: one owner per acquire, queued by RFairLock's script, woken on its own channel. */
export class RedissonFairLockImpl extends LockBase<RedissonFairKeys> {
  readonly #shared: RedissonFairShared;
  readonly #keys: RedissonFairKeys;
  readonly #scripts: HoldScripts;

  constructor(shared: RedissonFairShared, name: string) {
    const keys = redissonFairKeys(name);
    super(shared.runtime, 'fair-lock', name, keys, shared.commands);
    this.#shared = shared;
    this.#keys = keys;
    this.#scripts = {
      release: (hold, believed, whole) => shared.commands.release(keys, hold.owner, believed, whole),
      reenter: (hold, believed, leaseMs) => shared.commands.reenter(keys, hold.owner, believed, leaseMs),
    };
  }

  protected async takeFresh(waitMs: number, leaseMs: number | undefined, signal: AbortSignal | undefined): Promise<Lease> {
    const { runtime, commands } = this.#shared;
    // One owner for the whole wait: its place in the queue, and its channel, are its own.
    const owner = runtime.newOwner();
    // A try never joins the queue, as Redisson's tryLock() without a wait: a caller that dies
    // before it would leave costs nobody anything.
    const queue = waitMs !== 0;
    let sent: Promise<unknown> | undefined;
    try {
      return await acquire(runtime, {
        name: this.name,
        waitMs,
        signal,
        channel: `${this.#keys.channel}:${owner}`,
        rule: wakeHead,
        need: 1,
        key: this.#keys.lock,
        leaseMs: leaseMs ?? runtime.leaseMs,
        attempt: () => (sent = this.#attempt(owner, leaseMs, queue)),
        giveBack: (lease) => (lease as LeaseImpl).giveBack(),
      });
    } catch (error) {
      // A wait that ended without the lock leaves the queue once its last attempt is answered (so
      // after it, whatever the connection does), briefly awaited while Redis is reachable.
      if (sent && queue) {
        const leave = () => commands.leave(this.#keys, owner);
        // Its entry would hold up every waiter behind it, Java's too, until its Redisson deadline: a
        // leave not sent for want of a connection is sent again when it is back, until that deadline.
        const untilMs = runtime.watchdog.clock.now() + REDISSON_FAIR_WAIT_MS + (leaseMs ?? runtime.leaseMs);
        const leaving = sent
          .then(noop, noop)
          .then(leave)
          .catch((failure: unknown) => {
            if (isUnreachable(failure)) runtime.resend(leave, untilMs);
          });
        if (runtime.runner.ready) await settledWithin(leaving, LEAVE_WAIT_MS);
      }
      throw error;
    }
  }

  /** One attempt of the acquire's owner (a new Hold each time, the same owner). */
  #attempt(owner: string, leaseMs: number | undefined, queue: boolean): Promise<Attempt<Lease>> {
    const { runtime, commands, renewer } = this.#shared;
    const lease = leaseMs ?? runtime.leaseMs;
    const hold = new Hold(runtime, { name: this.name, key: this.#keys.lock, renewer, scripts: this.#scripts, renewable: leaseMs === undefined, owner });
    return attemptHold(runtime, hold, lease, 'fair-lock', {
      call: () =>
        commands.take(this.#keys, owner, lease, queue).then((outcome) => {
          if (outcome.kind === 'acquired') return outcome;
          // Queued: until the lock's lease (or the waiter before) ends, at most a lease; a free lock
          // the head is taking over, soon.
          return { kind: 'busy', retryMs: outcome.ms > 0 ? Math.min(outcome.ms + 1, runtime.leaseMs) : TAKEOVER_RETRY_MS };
        }),
      giveBack: () => commands.release(this.#keys, owner, 1, true),
    });
  }
}
