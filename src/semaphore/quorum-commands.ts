// The Redlock semaphore's scripts on every master (lua/semaphore/quorum-*.lua), each outcome decided by the
// majority: typed wrappers, so the semaphore above reads slots and owners, never raw replies.
import * as lua from '../generated/semaphore.ts';
import { toToken } from '../lock/commands.ts';
import type { ReleaseOutcome } from '../runtime/hold.ts';
import { defineScript } from '../runtime/script.ts';
import { noop } from '../runtime/waits.ts';
import type { Renewable } from '../runtime/renewable.ts';
import { leasesOf, type SemaphoreKeys } from './keys.ts';
import { released, renewed } from '../topology/quorum-decide.ts';
import { Quorum } from '../topology/quorum.ts';
import { answeredError, count, gather, noQuorum, pending, type Master, type Reply } from '../topology/quorum-replies.ts';

/** What one master answered to an attempt: the holder of every slot (the owner's own where it took them), or another limit. */
export type MasterSlots =
  | { readonly kind: 'slots'; readonly taken: boolean; readonly token: number; readonly waitMs: number; readonly holders: readonly string[] }
  | { readonly kind: 'mismatch'; readonly limit: number };

/** The replies of every master when an attempt or a read was decided (undefined: not answered yet). */
export type SlotReplies = readonly (Reply<MasterSlots> | undefined)[];

/** A slot list as a script argument. */
const joined = (slots: readonly number[]) => slots.join(',');

const acquire = defineScript(lua.quorumAcquire, (reply): [number, number | string, number, ...string[]] => reply as never, 3);
const release = defineScript(lua.quorumRelease, (reply) => Number(reply), 2);
const available = defineScript(lua.quorumAvailable, (reply) => reply as [number, ...(string | number)[]]);
const renew = defineScript(lua.quorumRenew, (reply) => (reply as number[]).map((flag) => flag === 1));
const fenceUp = defineScript(lua.quorumFenceUp, (reply) => reply === 1);

const isOk = (reply: Reply<unknown>) => reply.ok;

/** The limit a master keeps for the semaphore when it differs from the caller's (the first such reply), else undefined. */
export function mismatchOf(replies: SlotReplies): number | undefined {
  for (const reply of replies) if (reply?.ok && reply.value.kind === 'mismatch') return reply.value.limit;
  return undefined;
}

/** How many replies show each holder of `slot` (`self` left out). */
function holdersOf(replies: SlotReplies, slot: number, self?: string): Map<string, number> {
  const owners = new Map<string, number>();
  for (const reply of replies) {
    if (!reply?.ok || reply.value.kind !== 'slots') continue;
    const holder = reply.value.holders[slot] ?? '';
    if (holder !== '' && holder !== self) owners.set(holder, (owners.get(holder) ?? 0) + 1);
  }
  return owners;
}

/** The most replies that show one holder of `slot` (`self` left out). */
const mostFor = (replies: SlotReplies, slot: number, self?: string) => Math.max(0, ...holdersOf(replies, slot, self).values());

/**
 * The slots of `limit` that one owner other than `self` (any owner, without `self`) holds on a
 * majority of the replies: a slot held there is held by that owner's lease (two majorities share a
 * master, where a slot has one owner).
 */
export function heldSlots(replies: SlotReplies, limit: number, self: string | undefined, quorum: number): number[] {
  const held: number[] = [];
  for (let slot = 0; slot < limit; slot++) if (mostFor(replies, slot, self) >= quorum) held.push(slot);
  return held;
}

/** The slots a reply shows `owner` holding, or undefined when it took none there. */
export function takenBy(reply: Reply<MasterSlots> | undefined, owner: string): string | undefined {
  if (!reply?.ok || reply.value.kind !== 'slots' || !reply.value.taken) return undefined;
  return joined(reply.value.holders.flatMap((holder, slot) => (holder === owner ? [slot] : [])));
}

/**
 * The slots that a majority of masters gave `owner` alike, and those masters: the attempt holds
 * when some set of slots was taken on a majority (every master that took, took exactly `permits`).
 */
export function agreed(replies: SlotReplies, owner: string, quorum: number): { slots: string; masters: number[] } | undefined {
  for (const [slots, masters] of bySlots(replies, owner)) if (masters.length >= quorum) return { slots, masters };
  return undefined;
}

/** The masters that took slots for `owner`, grouped by the slots they gave it. */
function bySlots(replies: SlotReplies, owner: string): Map<string, number[]> {
  const groups = new Map<string, number[]>();
  replies.forEach((reply, i) => {
    const slots = takenBy(reply, owner);
    if (slots === undefined) return;
    const masters = groups.get(slots) ?? [];
    masters.push(i);
    groups.set(slots, masters);
  });
  return groups;
}

/** The Redlock semaphore's scripts on every master of one client, each settled by the majority. */
export class SlotCommands extends Quorum {
  /**
   * The attempt on every master, settled once a majority gave the owner the same slots, or once no
   * majority can: then either a majority answered (the semaphore is full or the masters were split),
   * or too few can still answer (no quorum). After `timeoutMs` the replies so far decide.
   */
  async acquire(
    keys: SemaphoreKeys,
    owner: string,
    permits: number,
    limit: number,
    leaseMs: number,
    fenceTtlMs: number,
    floor: string,
    candidates: readonly number[],
    timeoutMs: number,
  ): Promise<{ replies: SlotReplies; sent: readonly (Promise<MasterSlots> | undefined)[]; validUntil: number }> {
    const args = [owner, permits, limit, leaseMs, Math.max(fenceTtlMs, leaseMs), floor, joined(candidates), this.publish, this.message()];
    const on = async ({ runner }: Master): Promise<MasterSlots> => {
      const [code, value, waitMs, ...holders] = await runner.run(acquire, [keys.sem, keys.leases, keys.fence, keys.channel], args);
      if (code < 0) return { kind: 'mismatch', limit: Number(value) };
      return { kind: 'slots', taken: code === 1, token: code === 1 ? toToken(value, keys.fence) : 0, waitMs: Number(waitMs), holders: holders.map(String) };
    };
    // Each master's call, also those still out when the majority decided: their reply tells later what to give back.
    const sent: (Promise<MasterSlots> | undefined)[] = this.masters.map(() => undefined);
    // The end of the attempt's validity (`timeoutMs` is lease − drift): a failed attempt's give-back is waited for until then at most.
    const validUntil = performance.now() + timeoutMs;
    const replies = await this.settle(
      this.masters,
      (master, i) => (sent[i] = on(master)),
      (replies, done) => {
        if (done || mismatchOf(replies) !== undefined || agreed(replies, owner, this.quorum)) return replies.slice();
        // Could a majority still agree? Only with the masters that took, or have not answered yet.
        const left = pending(replies);
        const possible = Math.max(0, ...[...bySlots(replies, owner).values()].map((masters) => masters.length)) + left >= this.quorum;
        const answered = count(replies, isOk);
        return !possible && (answered >= this.quorum || (answered + left < this.quorum && this.heard(replies))) ? replies.slice() : undefined;
      },
      timeoutMs,
    );
    this.outstanding(keys.sem, owner, sent, replies);
    return { replies, sent, validUntil };
  }

  /**
   * Raises the fence to the quorum's token on the masters that gave the lease its slots, each only
   * while the lease still holds them there: true once a majority confirmed it.
   */
  fenceUp(keys: SemaphoreKeys, owner: string, token: number, fenceTtlMs: number, indexes: readonly number[]): Promise<boolean> {
    return this.confirmed(indexes, ({ runner }) => runner.run(fenceUp, [keys.sem, keys.leases, keys.fence], [owner, token, fenceTtlMs]));
  }

  /**
   * The give-back of what an attempt took, on one master at a time (all with one message, so that
   * subscribers count its copies), publishing (so that waiters wake) when `publish`. On each
   * connection it follows the acquire, so an acquire that lands late is given back too. Errors are
   * nobody's: the lease ends there with its time. Each call's promise settles when that master answered.
   */
  giveBack(keys: SemaphoreKeys, owner: string, publish: boolean): (master: number) => Promise<void> {
    const args = [owner, publish ? this.publish : '', this.message()];
    return (i) => this.masters[i]!.runner.run(release, [keys.sem, keys.leases, keys.channel], args).then(noop, noop);
  }

  /**
   * The release on every master (each one that held the lease publishes the same message). Released
   * when a majority released it, or when some did and too few can answer "gone"; gone when a majority
   * held nothing. A lease may live on a bare majority (the masters that agreed on its slots): after
   * `timeoutMs`, one master that released it is enough, rather than waiting for a silent one. Settled
   * on every master that answers within 50 ms of the decision (Quorum.settleAll).
   */
  release(keys: SemaphoreKeys, owner: string, name: string, timeoutMs: number): Promise<ReleaseOutcome> {
    const args = [owner, this.publish, this.message()];
    return this.settleAll(
      this.masters,
      ({ runner }, i): Promise<ReleaseOutcome> =>
        this.after(i, keys.sem, owner, async () => ((await runner.run(release, [keys.sem, keys.leases, keys.channel], args)) >= 0 ? { kind: 'released', left: 0 } : { kind: 'gone' })),
      released(this, `Semaphore "${name}" was not released`, name),
      timeoutMs,
      false,
    );
  }

  /**
   * The holders of every slot on every master: settled once each slot is known held on a majority
   * (by one owner) or free there, with a majority answering.
   */
  available(keys: SemaphoreKeys, limit: number, name: string): Promise<SlotReplies> {
    return gather(
      this.masters,
      async ({ runner }): Promise<MasterSlots> => {
        const [code, ...holders] = await runner.run(available, [keys.sem, keys.leases], [limit]);
        return code < 0 ? { kind: 'mismatch', limit: Number(holders[0]) } : { kind: 'slots', taken: false, token: 0, waitMs: -1, holders: holders.map(String) };
      },
      (replies, done) => {
        const answered = count(replies, isOk);
        if (mismatchOf(replies) !== undefined) return replies.slice();
        if (answered >= this.quorum && (done || this.#settled(replies, limit))) return replies.slice();
        if (!done && answered + pending(replies) >= this.quorum) return undefined;
        throw answeredError(replies) ?? noQuorum(`Semaphore "${name}" could not be read`, this.masters, replies, name);
      },
      true,
    );
  }

  /** Whether the replies so far tell every slot: held by one owner on a majority, or free for any that can still answer. */
  #settled(replies: SlotReplies, limit: number): boolean {
    const left = pending(replies);
    for (let slot = 0; slot < limit; slot++) {
      const most = mostFor(replies, slot);
      if (most < this.quorum && most + left >= this.quorum) return false;
    }
    return true;
  }

  /**
   * One flag per lease: renewed on a majority (true), or held by too few to be (false). A master
   * renews a lease only where it holds the slots given (`slotsOf`, those its majority agreed on),
   * so a majority that renewed is a majority holding every slot of it. A lease that only silent or
   * unreachable masters could decide within `timeoutMs` fails the batch: the watchdog tries again,
   * and the lease's deadline ends it if no majority comes back in time. (A release waits for the
   * renewal in flight: the timeout keeps a silent master from holding every release up.)
   */
  renew(leases: readonly Renewable[], leaseMs: number, slotsOf: (owner: string) => string, timeoutMs: number): Promise<boolean[]> {
    const keys = leases.flatMap((lease) => [lease.key, leasesOf(lease.key)]);
    const args = [leaseMs, ...leases.flatMap((lease) => [lease.owner, slotsOf(lease.owner)])];
    return this.settle(this.masters, ({ runner }) => runner.run(renew, keys, args), renewed(this, leases.length, `Renewal of ${leases.length} Redlock semaphore lease(s)`), timeoutMs);
  }
}
