// Grants and the waiters they go to. A grant reaches a waiter by whichever way comes first: its
// message on the client's grant channel, the reply of a release or leave of this client, or a
// heartbeat reply. The waiter only records it and wakes; its wait loop decides what to do with it.
import { Waiter, type Clock } from '../runtime/waiter.ts';
import type { WakeRule } from '../runtime/waiting.ts';

/** The lock granted to a waiting owner. */
export interface Grant {
  readonly owner: string;
  readonly token: number;
  /** Redis TIME (ms) when the claim below was read or set. */
  readonly nowMs: number;
  /** Milliseconds of claim left at `nowMs`. */
  readonly claimMs: number;
}

/** A fair-lock waiter: an owner in the Redis queue, woken with the grant it was sent. */
export class FairWaiter extends Waiter {
  readonly owner: string;
  #grant: Grant | undefined;
  /** The newest token offered: the same grant comes by several ways, and an old one may come late. */
  #token = 0;
  /** Woken from outside since the last look (a grant, or the waiting room after a resubscription). */
  #nudged = false;

  constructor(owner: string, clock: Clock) {
    super(1, clock);
    this.owner = owner;
  }

  offer(grant: Grant): void {
    if (grant.token <= this.#token) return;
    this.#token = grant.token;
    this.#grant = grant;
    this.wake();
  }

  override wake(): void {
    this.#nudged = true;
    super.wake();
  }

  /** The grant offered since the last call, if any (its wake-up is used up with it). */
  take(): Grant | undefined {
    const grant = this.#grant;
    this.#grant = undefined;
    if (grant) this.#nudged = false;
    return grant;
  }

  /** Whether something woke this waiter since the last call, rather than its own timer. */
  nudged(): boolean {
    const nudged = this.#nudged;
    this.#nudged = false;
    return nudged;
  }
}

/** `owner|token|nowMs|claimMs`, as the scripts' grantNext publishes it. */
export function parseGrant(message: string): Grant | undefined {
  const [owner, token, nowMs, claimMs] = message.split('|');
  const grant = { owner: owner ?? '', token: Number(token), nowMs: Number(nowMs), claimMs: Number(claimMs) };
  if (!grant.owner || !Number.isSafeInteger(grant.token) || !Number.isFinite(grant.nowMs) || !Number.isFinite(grant.claimMs)) return undefined;
  return grant;
}

/** Every fair-lock waiter of one client, by owner: a grant goes to its owner, wherever it came from. */
export class FairWaiters {
  readonly #byOwner = new Map<string, FairWaiter>();

  /** The wake rule of every grant channel: the message names its waiter. */
  readonly rule: WakeRule = (_queue, message) => {
    const grant = parseGrant(message);
    if (grant) this.offer(grant);
  };

  add(waiter: FairWaiter): void {
    this.#byOwner.set(waiter.owner, waiter);
  }

  delete(waiter: FairWaiter): void {
    if (this.#byOwner.get(waiter.owner) === waiter) this.#byOwner.delete(waiter.owner);
  }

  /**
   * Gives a grant to its waiter. One that is not waiting any more is ignored, never released: it may
   * have taken this very grant already, and a wait that gave up hands its grant on in `leave`.
   */
  offer(grant: Grant): void {
    this.#byOwner.get(grant.owner)?.offer(grant);
  }
}
