// The Redlock semaphore: client.semaphore() on a client of several masters. A semaphore of N permits
// is N slots, each an exclusive resource voted on by majority: a lease of k permits holds when a
// majority of masters gave it the same k slots within the validity time. Two majorities share a
// master, where a slot has one owner, so a slot is held by one lease at a time, and at most N permits
// are held. (A count per master, held on a majority, is not safe: docs/semaphore.md.) The semaphore
// itself (waits, wake-ups, leases, validation) is the single-server one, over these commands.
import type { Semaphore } from '../api.ts';
import type { SemaphoreOptions } from '../options.ts';
import type { ReleaseOutcome } from '../runtime/hold.ts';
import type { Renewable, Renewer } from '../runtime/renewable.ts';
import type { AvailableOutcome, SemaphoreAcquireOutcome, SemaphoreTopology } from './commands.ts';
import { semaphoreKeys, type SemaphoreKeys } from './keys.ts';
import { SemaphoreImpl, type SemaphoreShared } from './semaphore.ts';
import { driftMs } from '../topology/quorum-replies.ts';
import type { RedlockShared } from '../topology/quorum-setup.ts';
import { confirmHeld, splitRetryMs } from '../topology/quorum-decide.ts';
import { answeredError, count, noQuorum, type Reply } from '../topology/quorum-replies.ts';
import { agreed, heldSlots, mismatchOf, SlotCommands, takenBy, type MasterSlots, type SlotReplies } from './quorum-commands.ts';

/**
 * The most permits of a semaphore on a Redlock client: every attempt reads (and its reply lists)
 * the holder of every slot on every master.
 */
export const MAX_REDLOCK_PERMITS = 1_000;

/** The semaphore's name (for messages: SemaphoreImpl passes keys, not names). */
const nameOf = (keys: SemaphoreKeys) => keys.name;

/**
 * How long a renewal or a release waits for a master that does not answer, when the masters that did
 * cannot decide without it (a lease lives on a bare majority at times): a third of the watchdog lease,
 * at most a second.
 */
const silentMs = (leaseMs: number) => Math.min(1_000, leaseMs / 3);

/**
 * Up to `permits` distinct slots of `limit` at random, which an attempt asks for first: attempts of
 * different clients at the same moment then seldom ask for the same slots (the masters, each taking
 * the lowest free slots in its own arrival order, would split them between the attempts). None when
 * the attempt wants most of the slots: the lowest free ones do as well.
 */
function candidates(permits: number, limit: number): number[] {
  if (permits * 2 > limit) return [];
  const picked = new Set<number>();
  while (picked.size < permits) picked.add(Math.floor(Math.random() * limit));
  return [...picked];
}

/**
 * Gives back what an attempt took on every master where it may hold slots it does not keep: at once
 * where the reply is in (but where it took none), else once the master answers, when it took slots
 * it does not keep or failed (no answer is not "not taken"). Resolves once the give-back has settled
 * (Quorum.undone); never rejects.
 */
function giveBackWhere(
  slots: SlotCommands,
  keys: SemaphoreKeys,
  owner: string,
  replies: SlotReplies,
  sent: readonly (Promise<MasterSlots> | undefined)[],
  publish: boolean,
  keeps: (taken: string) => boolean,
  validUntil: number,
): Promise<void> {
  const back = slots.giveBack(keys, owner, publish);
  const settle = (i: number, reply: Reply<MasterSlots>) => {
    const taken = takenBy(reply, owner);
    return !reply.ok || (taken !== undefined && !keeps(taken)) ? back(i) : undefined;
  };
  const undos = replies.map((reply, i) => {
    if (reply !== undefined) return settle(i, reply);
    return sent[i]?.then(
      (value) => settle(i, { ok: true, value }),
      (error: unknown) => settle(i, { ok: false, error }),
    );
  });
  return slots.undone(replies, undos, validUntil);
}

/** What a master's answer to a failed attempt was, in a no-quorum error. */
function slotsSaid(value: MasterSlots): string {
  if (value.kind === 'mismatch') return `keeps another limit (${value.limit})`;
  return value.taken ? 'took it (given back)' : 'held elsewhere (no free permits)';
}

/**
 * The semaphore's commands on every master, decided by the majority: what SemaphoreImpl calls on one
 * server, so the Semaphore API and its waits are the same on both.
 */
export class RedlockSemaphoreCommands implements SemaphoreTopology {
  readonly #shared: RedlockShared;
  readonly #slots: SlotCommands;
  /** Owner -> the slots its majority agreed on, while its lease may be held: what renewal checks on each master. */
  readonly #agreed = new Map<string, string>();

  constructor(shared: RedlockShared) {
    this.#shared = shared;
    this.#slots = new SlotCommands(shared.masters, shared.runtime.publish);
  }

  /**
   * One attempt on every master. Acquired when a majority gave the owner the same slots within the
   * validity (lease − elapsed − drift: the attempt gives up waiting then, and the hold's deadline
   * counts from the first send), with the token confirmed on a majority; the other masters give
   * those slots back. Otherwise everything is given back, and the attempt is busy: until a release
   * or the earliest lease end when other leases hold too many slots on a majority, a few ms when
   * the masters were split between attempts.
   */
  async acquire(keys: SemaphoreKeys, owner: string, permits: number, limit: number, leaseMs: number, fenceTtlMs: number): Promise<SemaphoreAcquireOutcome> {
    const slots = this.#slots;
    const { quorum } = slots;
    const { replies, sent, validUntil } = await slots.acquire(keys, owner, permits, limit, leaseMs, fenceTtlMs, this.#shared.floor(), candidates(permits, limit), leaseMs - driftMs(leaseMs));
    const mismatch = mismatchOf(replies);
    const won = mismatch === undefined ? agreed(replies, owner, quorum) : undefined;
    if (!won) {
      const retry = this.#retry(replies, owner, permits, limit, quorum);
      // Slots taken on a majority, even not all alike, may have made another attempt find the
      // semaphore full: a split tells it of the give-back (a full one does not: it would wake
      // itself, and find the same again).
      const seen = heldSlots(replies, limit, undefined, quorum).length > heldSlots(replies, limit, owner, quorum).length;
      // Settled before the caller hears of it: a rejection leaves nothing behind on the masters that answer.
      await giveBackWhere(slots, keys, owner, replies, sent, seen && !retry.full, () => false, validUntil);
      if (mismatch !== undefined) return { kind: 'mismatch', limit: mismatch };
      if (count(replies, (reply) => reply.ok) < quorum) {
        const name = nameOf(keys);
        throw answeredError(replies) ?? noQuorum(`Semaphore "${name}" was not acquired`, slots.masters, replies, name, slotsSaid);
      }
      return { kind: 'busy', retryMs: retry.ms };
    }
    // Held: the masters that took other slots give them back. A late master that agrees keeps them.
    // (Not waited for: the acquire is decided, and what a minority gives back is no part of the lease.)
    void giveBackWhere(slots, keys, owner, replies, sent, false, (taken) => taken === won.slots, validUntil);
    // The token: the Redlock rule (docs/guarantees.md), as every kind's.
    const tokens = won.masters.map((i) => (replies[i] as { value: { token: number } }).value.token);
    const decision = await confirmHeld(won.masters, tokens, quorum, {
      fenceUp: (token, taken) => slots.fenceUp(keys, owner, token, Math.max(fenceTtlMs, leaseMs), taken),
      rollback: () => slots.undone(replies, [...slots.masters.keys()].map(slots.giveBack(keys, owner, true)), validUntil),
    });
    if (decision.kind === 'busy') return decision;
    this.#agreed.set(owner, won.slots);
    return { kind: 'acquired', token: decision.token };
  }

  /**
   * How long a busy attempt sleeps at most (a release wakes it earlier): while other leases hold more
   * slots on a majority than leave room for it, until the earliest lease end on a majority of masters;
   * else (split between attempts) a few ms.
   */
  #retry(replies: SlotReplies, owner: string, permits: number, limit: number, quorum: number): { ms: number; full: boolean } {
    const ends = replies
      .flatMap((reply) => (reply?.ok && reply.value.kind === 'slots' ? [reply.value.waitMs < 0 ? this.#shared.runtime.leaseMs : reply.value.waitMs] : []))
      .sort((a, b) => a - b);
    // A millisecond after the lease end on Redis's clock (a Node timer may fire up to one early).
    const hint = (ends[quorum - 1] ?? this.#shared.runtime.leaseMs) + 1;
    const full = heldSlots(replies, limit, owner, quorum).length > limit - permits;
    return { ms: full ? hint : Math.min(hint, splitRetryMs()), full };
  }

  release(keys: SemaphoreKeys, owner: string): Promise<ReleaseOutcome> {
    this.#agreed.delete(owner);
    return this.#slots.release(keys, owner, nameOf(keys), silentMs(this.#shared.runtime.leaseMs));
  }

  /** The limit less the slots held on a majority of masters (by one owner each). */
  async available(keys: SemaphoreKeys, limit: number): Promise<AvailableOutcome> {
    const replies = await this.#slots.available(keys, limit, nameOf(keys));
    const mismatch = mismatchOf(replies);
    if (mismatch !== undefined) return { kind: 'mismatch', limit: mismatch };
    return { kind: 'available', permits: limit - heldSlots(replies, limit, undefined, this.#slots.quorum).length };
  }

  /**
   * One flag per lease. A lease whose attempt is still out has no slots agreed yet: there is nothing
   * to renew (its lease runs from its attempt), and a renewal of no slots, which every master
   * refuses, would read as a loss once the attempt went through. It is not sent, and its flag is
   * false: not held yet, so no loss (the watchdog renews it at its next tick).
   */
  async renew(leases: readonly Renewable[], leaseMs: number): Promise<boolean[]> {
    const agreed = leases.map((lease) => this.#agreed.get(lease.owner));
    const sent = leases.filter((_, i) => agreed[i] !== undefined);
    const renewed = sent.length === 0 ? [] : await this.#slots.renew(sent, leaseMs, (owner) => this.#agreed.get(owner) ?? '', silentMs(leaseMs));
    // A lease that is gone is never renewed again: forget its slots.
    sent.forEach((lease, i) => renewed[i] || this.#agreed.delete(lease.owner));
    let next = 0;
    return agreed.map((slots) => slots !== undefined && renewed[next++] === true);
  }
}

/** What every semaphore of a Redlock client shares: the quorum commands, and their renewer (the watchdog batches by renewer). */
export function createRedlockSemaphoreShared(redlock: RedlockShared): SemaphoreShared {
  const commands = new RedlockSemaphoreCommands(redlock);
  // One lease per renewal: a lease that a silent master keeps undecided fails alone, not its batch.
  const renewer: Renewer = { renew: (batch, leaseMs) => commands.renew(batch, leaseMs), batch: 1, allowanceMs: driftMs };
  return { runtime: redlock.runtime, commands, renewer, keys: semaphoreKeys };
}

/**
 * The semaphore of a Redlock client: the single-server Semaphore over the quorum commands.
 * @throws {TypeError | RangeError} for bad options, naming `permits` (at most 1000 on a Redlock client).
 */
export function redlockSemaphore(shared: SemaphoreShared, prefix: string, name: string, options: SemaphoreOptions): Semaphore {
  const made = new SemaphoreImpl(shared, prefix, name, options);
  if (made.permits > MAX_REDLOCK_PERMITS) {
    throw new RangeError(`Expected \`permits\` to be a whole number from 1 to ${MAX_REDLOCK_PERMITS} on a Redlock client (every attempt reads each permit's slot on every master), got \`${made.permits}\` (number)`);
  }
  return made;
}
