// The waiting room: per channel, one subscription (reference-counted by the subscriber) and one
// local FIFO queue of waiters. A message on a channel goes to that channel's wake rule.
import { diagnostics, type WakeMessage } from '../diagnostics.ts';
import type { Subscriber } from './subscriber.ts';
import type { Waiter } from './waiter.ts';

/** Decides whom a message on a channel wakes. */
export type WakeRule = (queue: readonly Waiter[], message: string) => void;

/** The rule of an exclusive lock: a release wakes the head of the queue, not the whole herd. */
export const wakeHead: WakeRule = (queue) => queue[0]?.wake();

/** The rule of shared waits (readers, a latch's waiters): a message wakes every waiter. */
export const wakeAll: WakeRule = (queue) => {
  for (const waiter of queue) waiter.wake();
};

/** Where a message is delivered: the subscriber calls these. */
export interface Inbox {
  message(channel: string, message: string): void;
  /** Messages may have been lost (the subscriber reconnected): every waiter tries again. */
  resubscribed(): void;
}

/** Hears every message of a channel beside its waiters (an election's observers): see `WaitingRoom#listen`. */
export interface Listener {
  message(message: string): void;
  /** Messages may have been lost (the subscriber reconnected). */
  resubscribed(): void;
}

/** How a room treats its local queue; set by the waiter that opens the room. */
export interface RoomOptions {
  /**
   * Whether a head that leaves hands on to the next local waiter (wakes it, or bounds its sleep by
   * the lease it left with). False where the order is kept elsewhere (the fair lock's queue in
   * Redis): its waiters are woken only by the wake rule and by a resubscription.
   * @default true
   */
  readonly handsOn?: boolean;
  /**
   * How long, in milliseconds, the channel stays subscribed after its last waiter left, so that the
   * next waiter finds it listening (see `listening`) without a SUBSCRIBE round trip.
   * @default 0
   */
  readonly lingerMs?: number;
}

interface Room {
  readonly queue: Waiter[];
  readonly rule: WakeRule;
  /** The lock's name, for diagnostics. */
  readonly name: string;
  readonly handsOn: boolean;
  readonly lingerMs: number;
}

export class WaitingRoom implements Inbox {
  readonly #rooms = new Map<string, Room>();
  /** Channels with no waiter left whose subscription is kept a while: channel -> its timer. */
  readonly #lingering = new Map<string, NodeJS.Timeout>();
  /**
   * Channel -> how many messages it has had (or reconnects that may have lost one) while listened
   * to: what a waiter that marked it before its attempt compares with when it enters.
   */
  readonly #heard = new Map<string, number>();
  readonly #clientId: string;
  /** Channel -> who hears its every message, beside its room. */
  readonly #listeners = new Map<string, Set<Listener>>();
  #subscriber: Subscriber | undefined;

  constructor(clientId: string) {
    this.#clientId = clientId;
  }

  /** Set once by the runtime: the room and its subscriber point at each other. */
  attach(subscriber: Subscriber): void {
    this.#subscriber = subscriber;
  }

  isEmpty(channel: string): boolean {
    return !this.#rooms.has(channel);
  }

  /** Whether the channel is subscribed, or being subscribed: it has waiters or listeners, or lingers after waiters. */
  listening(channel: string): boolean {
    return this.#rooms.has(channel) || this.#lingering.has(channel) || this.#listeners.has(channel);
  }

  /**
   * Subscribes (once per channel, shared with its waiters) and hands the listener every message of
   * the channel until the returned function is called. Rejects, with nothing subscribed, when the
   * subscription fails.
   */
  async listen(channel: string, listener: Listener): Promise<() => void> {
    await this.#subscriber!.subscribe(channel);
    let listeners = this.#listeners.get(channel);
    if (!listeners) this.#listeners.set(channel, (listeners = new Set()));
    listeners.add(listener);
    return () => {
      if (!listeners.delete(listener)) return;
      if (listeners.size === 0 && this.#listeners.get(channel) === listeners) this.#listeners.delete(channel);
      this.#subscriber!.unsubscribe(channel);
    };
  }

  /**
   * A mark to take before an attempt, for `enter`: undefined when the channel is not listened to
   * now (a release before the subscription would go unheard).
   */
  mark(channel: string): number | undefined {
    return this.listening(channel) ? (this.#heard.get(channel) ?? 0) : undefined;
  }

  /**
   * Subscribes (once per channel) and queues the waiter at the tail; resolves to whether it is the
   * head and should try at once: always, unless `mark` (taken before its last attempt, while the
   * channel was listened to) shows that no message came since. A failed subscription leaves
   * nothing queued or subscribed.
   */
  async enter(channel: string, waiter: Waiter, rule: WakeRule, name: string, options: RoomOptions = {}, mark?: number): Promise<boolean> {
    await this.#subscriber!.subscribe(channel);
    const lingering = this.#lingering.get(channel);
    if (lingering) {
      // The reference kept after the last waiter is dropped: this waiter's own holds it now.
      clearTimeout(lingering);
      this.#lingering.delete(channel);
      this.#subscriber!.unsubscribe(channel);
    }
    const room = this.#rooms.get(channel);
    if (room) {
      room.queue.push(waiter);
      return false;
    }
    this.#rooms.set(channel, { queue: [waiter], rule, name, handsOn: options.handsOn ?? true, lingerMs: options.lingerMs ?? 0 });
    return mark === undefined || (this.#heard.get(channel) ?? 0) !== mark;
  }

  /** Counts a message (or a possible loss) on a channel that is listened to. */
  #hear(channel: string): void {
    if (this.listening(channel)) this.#heard.set(channel, (this.#heard.get(channel) ?? 0) + 1);
  }

  /**
   * Removes a waiter and drops its subscription reference. In a room that hands on (the default), a
   * head that leaves without the lock may have swallowed a wake-up meant for the queue, so the next
   * head is woken to try in its place; a head that leaves with the lock, for a lease of `leaseMs`,
   * bounds the next head's sleep by that lease: if the hold ends by expiry, nothing is published.
   * A waiter that leaves with wake-ups it did not use (`Waiter#unused`: a semaphore's, which came
   * while it attempted) hands each on to the next waiter in order, wherever it stood in the queue.
   */
  leave(channel: string, waiter: Waiter, leaseMs?: number): void {
    const room = this.#rooms.get(channel);
    const index = room?.queue.indexOf(waiter) ?? -1;
    if (!room || index < 0) return;
    room.queue.splice(index, 1);
    if (room.queue.length === 0 && room.lingerMs > 0) {
      // The last waiter's reference is kept until the room has stayed empty for lingerMs.
      this.#rooms.delete(channel);
      const timer = setTimeout(() => {
        this.#lingering.delete(channel);
        this.#heard.delete(channel);
        this.#subscriber!.unsubscribe(channel);
      }, room.lingerMs);
      this.#lingering.set(channel, timer.unref());
      return;
    }
    this.#subscriber!.unsubscribe(channel);
    if (room.queue.length === 0) {
      this.#rooms.delete(channel);
      this.#heard.delete(channel);
    }
    else if (!room.handsOn) return;
    else {
      const unused = Math.max(waiter.unused(leaseMs !== undefined), index === 0 && leaseMs === undefined ? 1 : 0);
      for (let i = 0; i < unused && i < room.queue.length; i++) room.queue[i]!.wake();
      if (unused === 0 && index === 0) room.queue[0]?.shorten(leaseMs!);
    }
  }

  message(channel: string, message: string): void {
    this.#hear(channel);
    const listeners = this.#listeners.get(channel);
    if (listeners) for (const listener of listeners) listener.message(message);
    const room = this.#rooms.get(channel);
    if (!room) return;
    if (diagnostics.wake.hasSubscribers) diagnostics.wake.publish({ clientId: this.#clientId, name: room.name } satisfies WakeMessage);
    room.rule(room.queue, message);
  }

  resubscribed(): void {
    for (const channel of this.#lingering.keys()) this.#hear(channel);
    for (const listeners of this.#listeners.values()) for (const listener of listeners) listener.resubscribed();
    for (const room of this.#rooms.values()) for (const waiter of room.queue) waiter.wake();
  }

  /** How many waiters are queued, over all channels. */
  get size(): number {
    let size = 0;
    for (const room of this.#rooms.values()) size += room.queue.length;
    return size;
  }
}
