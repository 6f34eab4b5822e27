// The subscriber connection of a Redlock client: one real subscriber connection per master behind the
// face of one, so the runtime's Subscriber and WaitingRoom stay as they are. A release publishes on
// every master with one unique message, delivered once a majority of masters has published it.
import { EventEmitter } from 'node:events';
import { isDown, type SubscriberConnection } from '../port/port.ts';
import { classify, isReplyError } from '../runtime/script.ts';
import { count, noQuorum, SILENT_MS, type Named, type Reply } from './quorum-replies.ts';

/** Messages of Redlock releases (`rl:<nonce>:<seq>`) arrive once per master that released. */
const REDLOCK_MESSAGE = /^rl:/;
/**
 * What a release message delivers: a semaphore's (`rl:<nonce>:<seq>:<permits>`) the number of
 * permits that came free, which its wake rule reads; a lock's the message itself.
 */
const payload = (message: string) => /^rl:[^:]*:[^:]*:(\d+)$/.exec(message)?.[1] ?? message;
/** A release heard from fewer than a majority of masters is delivered this long after its first copy. */
const FALLBACK_MS = 20;

interface Copies {
  count: number;
  delivered: boolean;
  readonly timer: NodeJS.Timeout;
}

export class FanoutConnection extends EventEmitter {
  readonly #connections: readonly SubscriberConnection[];
  readonly #quorum: number;
  readonly #masters: readonly Named[];
  /** Per master: whether its command connection is ready (the master answers now). */
  readonly #answering: readonly (() => boolean)[];
  readonly #copies = new Map<string, Copies>();
  /** Connections where a SUBSCRIBE failed: their first 'ready' must subscribe them. */
  readonly #missed = new Set<SubscriberConnection>();
  /** Subscriptions waiting for a connection that is reconnecting: each is sent at its next 'ready'. */
  readonly #back = new Map<SubscriberConnection, Set<() => void>>();
  #readyOnce = false;

  /**
   * @param connections one subscriber connection per master (relock's own, lazily connecting)
   * @param quorum how many masters must confirm a subscription
   * @param masters each master as errors name it: host:port, and its server's last connection error;
   *   `answering`: whether its command connection is ready
   */
  constructor(connections: readonly SubscriberConnection[], quorum: number, masters: readonly (Pick<Named, 'label' | 'lastError'> & { readonly answering?: () => boolean })[]) {
    super();
    this.#connections = connections;
    this.#quorum = quorum;
    // Down, for an error, is this subscriber connection's state.
    this.#masters = masters.map((master, i) => ({ ...master, down: () => isDown(connections[i]!.status) }));
    this.#answering = masters.map((master) => master.answering ?? (() => false));
    for (const connection of connections) {
      let ready = false;
      connection.on('message', (channel: string, message: string) => this.#message(channel, message));
      connection.on('ready', () => {
        const waiting = this.#back.get(connection);
        this.#back.delete(connection);
        for (const send of waiting ?? []) send();
        // The Subscriber treats its first 'ready' as the start and any later one as a reconnect: the
        // first master up starts it; a master that comes back after a drop, or that comes up late after
        // a SUBSCRIBE failed on it, is a reconnect (everything is subscribed again, every waiter retries).
        if (!ready && this.#readyOnce && !this.#missed.has(connection)) {
          ready = true;
          return;
        }
        ready = true;
        this.#readyOnce = true;
        this.emit('ready');
      });
    }
  }

  /**
   * A release is delivered once, when a majority of masters has published it (a release publishes on
   * a majority, the gate among them: the lock is free there, where a waiter woken by the first copy
   * would race the releases still on their way), or 20 ms after its first copy if that majority never
   * publishes it (masters down, a holder without the gate). Other messages pass at once.
   */
  #message(channel: string, message: string): void {
    if (!REDLOCK_MESSAGE.test(message)) {
      this.emit('message', channel, message);
      return;
    }
    const key = `${channel}\n${message}`;
    let copies = this.#copies.get(key);
    if (!copies) {
      const created: Copies = {
        count: 0,
        delivered: false,
        timer: setTimeout(() => {
          // Delivered without a majority; copies still on their way are counted, not delivered again.
          setTimeout(() => this.#copies.delete(key), 1_000).unref();
          if (created.delivered) return;
          created.delivered = true;
          this.emit('message', channel, payload(message));
        }, FALLBACK_MS).unref(),
      };
      this.#copies.set(key, (copies = created));
    }
    if (++copies.count === this.#quorum) {
      clearTimeout(copies.timer);
      // Kept a while, so that a copy from a master beyond the majority is counted, not delivered again.
      setTimeout(() => this.#copies.delete(key), 1_000).unref();
      if (copies.delivered) return;
      copies.delivered = true;
      this.emit('message', channel, payload(message));
    }
  }

  /**
   * Subscribes on every master; resolves once a majority confirmed, rejects once a majority cannot:
   * with the masters' own refusal when each failed master refused (an ACL), else with
   * `ERR_LOCK_NO_QUORUM` saying what each master did, once every master that is not down answered
   * (SILENT_MS at most): a master that is up is named "subscribed", not "no answer".
   */
  subscribe(...channels: string[]): Promise<void> {
    const n = this.#connections.length;
    return new Promise<void>((resolve, reject) => {
      let ok = 0;
      let settled = false;
      let late = false;
      let timer: NodeJS.Timeout | undefined;
      let lastError: unknown;
      const replies: (Reply<void> | undefined)[] = this.#connections.map(() => undefined);
      const check = () => {
        if (settled || count(replies, (reply) => !reply.ok) < n - this.#quorum + 1) return;
        const open = replies.some((reply, i) => reply === undefined && !isDown(this.#connections[i]!.status));
        if (open && !late) {
          timer ??= setTimeout(() => ((late = true), check()), SILENT_MS).unref();
          return;
        }
        settled = true;
        clearTimeout(timer);
        const refused = replies.every((reply) => reply === undefined || reply.ok || isReplyError(reply.error));
        // The subscriber names the channel: the masters' part of the message starts with "no quorum".
        reject(refused ? lastError : noQuorum('', this.#masters, replies, undefined, () => 'subscribed'));
      };
      const fail = (i: number, error: unknown) => {
        this.#missed.add(this.#connections[i]!);
        lastError = error;
        // A connection failure is named by its server's own error (a refused connection), not by the client's retry limit.
        const failure = isReplyError(error) ? error : (this.#masters[i]!.lastError?.() ?? error);
        replies[i] = { ok: false, error: isReplyError(error) ? error : classify(failure, [], undefined, false) };
        check();
      };
      this.#connections.forEach((connection, i) => {
        const send = () =>
          void connection.subscribe(...channels).then(
            () => {
              replies[i] = { ok: true, value: undefined };
              if (++ok === this.#quorum) resolve();
              check();
            },
            (error: unknown) => fail(i, error),
          );
        // A subscriber connection coming back after a drop (its first try 100 ms after it) while its
        // master answers commands is waited for, up to SILENT_MS, as a master slow to answer is: a wait
        // that begins just after a drop of its subscriber connections does not fail for them, though
        // every master answered its attempt. Not back by then, it fails as one known down. A master
        // whose command connection is not ready either (down) fails at once, as before.
        if (connection.status === 'reconnecting' && this.#answering[i]!()) {
          this.#whenBack(connection, send, () => fail(i, new Error(`the subscriber connection is ${connection.status}`)));
          return;
        }
        // A connection known down fails at once (it is subscribed again when it comes back).
        if (isDown(connection.status)) {
          fail(i, new Error(`the subscriber connection is ${connection.status}`));
          return;
        }
        send();
      });
    });
  }

  /** Calls `send` at the connection's next 'ready', or `giveUp` if it is not back within SILENT_MS. */
  #whenBack(connection: SubscriberConnection, send: () => void, giveUp: () => void): void {
    let waiting = this.#back.get(connection);
    if (!waiting) this.#back.set(connection, (waiting = new Set()));
    const back = () => {
      clearTimeout(timer);
      send();
    };
    const timer = setTimeout(() => {
      waiting.delete(back);
      giveUp();
    }, SILENT_MS).unref();
    waiting.add(back);
  }

  /** Unsubscribes on every master; failures only leave subscriptions nobody listens to. */
  async unsubscribe(...channels: string[]): Promise<void> {
    await Promise.allSettled(this.#connections.map((connection) => connection.unsubscribe(...channels)));
  }

  disconnect(): void {
    for (const connection of this.#connections) connection.disconnect();
  }
}
