// The shared subscriber: one connection per client, one reference-counted SUBSCRIBE per channel.
import { debuglog } from 'node:util';
import { LockError } from './errors.ts';
import type { RedisClient } from './options.ts';

const log = debuglog('relock:subscriber');

interface Channel {
  refs: number;
  readonly subscribed: Promise<void>;
}

export interface SubscriberEvents {
  /** A release was published on the channel. */
  message(channel: string): void;
  /** The connection came back after a drop and every channel is subscribed again. */
  resubscribed(): void;
  /** A connection error, for the client to report. */
  error(error: Error): void;
}

export class Subscriber {
  readonly #connect: () => RedisClient;
  readonly #events: SubscriberEvents;
  readonly #channels = new Map<string, Channel>();
  #connection: RedisClient | undefined;
  #readyOnce = false;

  constructor(connect: () => RedisClient, events: SubscriberEvents) {
    this.#connect = connect;
    this.#events = events;
  }

  #connection_(): RedisClient {
    if (this.#connection) return this.#connection;
    const connection = this.#connect();
    connection.on('message', (channel: string) => this.#events.message(channel));
    connection.on('error', (error: Error) => this.#events.error(error));
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
        () => this.#events.resubscribed(),
        (error: Error) => {
          this.#events.error(error);
          this.#events.resubscribed();
        },
      );
    });
    this.#connection = connection;
    return connection;
  }

  /** Takes a reference on the channel; resolves once Redis confirmed the subscription. */
  async subscribe(channel: string): Promise<void> {
    let entry = this.#channels.get(channel);
    if (entry) {
      entry.refs++;
    } else {
      const subscribed = this.#connection_()
        .subscribe(channel)
        .then(
          () => undefined,
          (error: unknown) => {
            if (this.#channels.get(channel) === entry) this.#channels.delete(channel);
            throw new LockError(
              `Cannot subscribe to "${channel}" to wait for the lock: ${error instanceof Error ? error.message : String(error)}`,
              { cause: error },
            );
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

  async close(): Promise<void> {
    const connection = this.#connection;
    this.#channels.clear();
    if (!connection) return;
    this.#connection = undefined;
    connection.disconnect();
  }
}
