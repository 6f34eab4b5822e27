// The shared subscriber: one reference-counted subscription per channel, whatever the number of
// waiters, over a transport: one connection with SUBSCRIBE (a single server, or a Cluster without
// sharded pub/sub), or one connection per shard with SSUBSCRIBE (shards.ts). Messages go straight to
// the waiting room.
import { debuglog } from 'node:util';
import { LockError } from '../errors.ts';
import type { SubscriberConnection } from '../port/port.ts';
import { classify, errorMessage, underneath } from './script.ts';
import type { Inbox } from './waiting.ts';

const log = debuglog('relock:subscriber');

/** How channels reach Redis. Each channel is subscribed at most once at a time (the Subscriber counts). */
export interface Transport {
  /** Resolves once Redis confirmed the subscription. */
  subscribe(channel: string): Promise<void>;
  /** Best effort: a failure only leaves a subscription nobody waits on. */
  unsubscribe(channel: string): void;
  close(): void;
}

/** What a transport reports back: messages, and subscriptions renewed after messages may have been lost. */
export interface TransportEvents {
  message(channel: string, message: string): void;
  /** Every waiter tries again: what was published while a connection was down is lost. */
  resubscribed(): void;
  error(error: Error): void;
}

/** Makes the transport on first use: the subscriber opens nothing before the first wait. */
export type TransportFactory = (events: TransportEvents) => Transport;

/** How long a connection that ended for good is replaced after (replaceOnEnd). */
const REPLACE_AFTER_MS = 100;

/**
 * One connection for every channel (SUBSCRIBE); resubscribes itself after a reconnect. With
 * `replaceOnEnd`, `connect` opens a connection that does not reconnect (one node of a Cluster
 * without sharded pub/sub, which the cluster bus carries every PUBLISH to): when it ends, another
 * is opened (`connect` picks the node) and, once ready, subscribed again as after a reconnect.
 * `sharded`: SSUBSCRIBE instead, on a connection that routes each channel to its shard itself (a
 * GLIDE Cluster's, RedisPort.routesPubSub).
 */
export function connectionTransport(connect: () => SubscriberConnection, replaceOnEnd = false, sharded = false): TransportFactory {
  return (events) => {
    const channels = new Set<string>();
    const subscribe = (on: SubscriberConnection, names: string[]) => (sharded ? on.ssubscribe(...names) : on.subscribe(...names));
    let connection: SubscriberConnection | undefined;
    /** The last connection error, the cause of a SUBSCRIBE the client gave up on. */
    let lastError: Error | undefined;
    let readyOnce = false;
    let closed = false;
    /** Opens the next connection a moment later (its first 'ready' resubscribes); tries again while it cannot. */
    const replace = (): void => {
      setTimeout(() => {
        if (closed || connection || channels.size === 0) return;
        try {
          open();
        } catch (error) {
          events.error(error as Error);
          replace();
        }
      }, REPLACE_AFTER_MS).unref();
    };
    const open = (): SubscriberConnection => {
      if (connection) return connection;
      const opened = connect();
      if (replaceOnEnd) {
        opened.on('end', () => {
          if (connection !== opened || closed) return;
          connection = undefined;
          log('subscriber connection ended; replacing it');
          replace();
        });
      }
      // Its 'error' events are the connect factory's to report (the client listens on every connection it makes).
      opened.on('error', (error: Error) => (lastError = error));
      opened.on(sharded ? 'smessage' : 'message', (channel: string, message: string) => events.message(channel, message));
      opened.on('ready', () => {
        if (!readyOnce) {
          readyOnce = true;
          return;
        }
        // What was published while the connection was down is lost: subscribe again, then let every
        // waiter retry at once.
        log('reconnected; resubscribing %d channels', channels.size);
        const again = channels.size > 0 ? subscribe(opened, [...channels]) : Promise.resolve();
        again.then(
          () => events.resubscribed(),
          (error: Error) => {
            events.error(error);
            events.resubscribed();
          },
        );
      });
      return (connection = opened);
    };
    return {
      async subscribe(channel) {
        channels.add(channel);
        try {
          await subscribe(open(), [channel]);
        } catch (error) {
          channels.delete(channel);
          throw underneath(error, lastError);
        }
      },
      unsubscribe(channel) {
        channels.delete(channel);
        const sent = sharded ? connection?.sunsubscribe(channel) : connection?.unsubscribe(channel);
        sent?.catch((error: Error) => log('unsubscribe %s failed: %s', channel, error.message));
      },
      close() {
        closed = true;
        channels.clear();
        connection?.disconnect();
        connection = undefined;
      },
    };
  };
}

interface Channel {
  refs: number;
  readonly subscribed: Promise<void>;
}

export class Subscriber {
  readonly #factory: TransportFactory;
  readonly #inbox: Inbox;
  readonly #onError: (error: Error) => void;
  readonly #channels = new Map<string, Channel>();
  #transport: Transport | undefined;
  #closed = false;

  constructor(factory: TransportFactory, inbox: Inbox, onError: (error: Error) => void) {
    this.#factory = factory;
    this.#inbox = inbox;
    this.#onError = onError;
  }

  #open(): Transport {
    this.#transport ??= this.#factory({
      message: (channel, message) => this.#inbox.message(channel, message),
      resubscribed: () => this.#inbox.resubscribed(),
      error: (error) => this.#onError(error),
    });
    return this.#transport;
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
    this.#transport?.unsubscribe(channel);
  }

  close(): void {
    this.#closed = true;
    this.#channels.clear();
    this.#transport?.close();
    this.#transport = undefined;
  }
}
