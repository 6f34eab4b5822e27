// The shared subscriber: one connection per client, opened at the first wait, one
// reference-counted SUBSCRIBE per channel. Messages go straight to the waiting room.
import { debuglog } from 'node:util';
import { LockError } from '../errors.ts';
import type { RedisClient } from '../options.ts';
import { classify, errorMessage } from './script.ts';
import type { Inbox } from './waiting.ts';

const log = debuglog('relock:subscriber');

interface Channel {
  refs: number;
  readonly subscribed: Promise<void>;
}

export class Subscriber {
  readonly #connect: () => RedisClient;
  readonly #inbox: Inbox;
  readonly #onError: (error: Error) => void;
  readonly #channels = new Map<string, Channel>();
  #connection: RedisClient | undefined;
  #readyOnce = false;
  #closed = false;

  constructor(connect: () => RedisClient, inbox: Inbox, onError: (error: Error) => void) {
    this.#connect = connect;
    this.#inbox = inbox;
    this.#onError = onError;
  }

  #open(): RedisClient {
    if (this.#connection) return this.#connection;
    const connection = this.#connect();
    // Its 'error' events are the connect factory's to report (the client listens on every connection it makes).
    connection.on('message', (channel: string, message: string) => this.#inbox.message(channel, message));
    connection.on('ready', () => {
      if (!this.#readyOnce) {
        this.#readyOnce = true;
        return;
      }
      // What was published while the connection was down is lost: subscribe again, then let every
      // waiter retry at once.
      const channels = [...this.#channels.keys()];
      log('reconnected; resubscribing %d channels', channels.length);
      const again = channels.length > 0 ? connection.subscribe(...channels) : Promise.resolve();
      again.then(
        () => this.#inbox.resubscribed(),
        (error: Error) => {
          this.#onError(error);
          this.#inbox.resubscribed();
        },
      );
    });
    this.#connection = connection;
    return connection;
  }

  /** Takes a reference on the channel; resolves once Redis confirmed the subscription. */
  async subscribe(channel: string): Promise<void> {
    // After close(), never open a connection again: it would keep the process alive.
    if (this.#closed) throw new LockError('The LockClient was closed', { code: 'ERR_LOCK_CLOSED' });
    let entry = this.#channels.get(channel);
    if (entry) {
      entry.refs++;
    } else {
      const subscribed = this.#open()
        .subscribe(channel)
        .then(
          () => undefined,
          (error: unknown) => {
            if (this.#channels.get(channel) === entry) this.#channels.delete(channel);
            const classified = classify(error, [channel], channel, this.#closed);
            throw new LockError(`Cannot subscribe to "${channel}" to wait for the lock: ${errorMessage(error)}`, {
              cause: error,
              code: classified instanceof LockError ? classified.code : 'ERR_LOCK',
            });
          },
        );
      entry = { refs: 1, subscribed };
      this.#channels.set(channel, entry);
    }
    try {
      await entry.subscribed;
    } catch (error) {
      entry.refs--;
      throw error;
    }
  }

  /** Drops a reference; the last one unsubscribes. */
  unsubscribe(channel: string): void {
    const entry = this.#channels.get(channel);
    if (!entry || --entry.refs > 0) return;
    this.#channels.delete(channel);
    // A failed UNSUBSCRIBE only leaves a subscription whose messages nobody waits for.
    this.#connection?.unsubscribe(channel).catch((error: Error) => log('unsubscribe %s failed: %s', channel, error.message));
  }

  close(): void {
    this.#closed = true;
    this.#channels.clear();
    this.#connection?.disconnect();
    this.#connection = undefined;
  }
}
