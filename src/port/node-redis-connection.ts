// What the node-redis adapter (port/node-redis.ts) drives: the client's shape, its failures as the
// port reports them, deadlines, and the subscriber connections relock makes over node-redis (a
// client of its own, opened at its first command or at once, its messages and state turned into the
// port's events).
import { EventEmitter } from 'node:events';
import type { SubscriberConnection } from './port.ts';
import { replyErrors, subscriberClosed } from './shared.ts';

/** A node-redis pub/sub listener. */
export type Listener = (message: string, channel: string) => void;

/** What relock calls on a node-redis client (RedisClientType of node-redis 5 and 6). */
export interface Client {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  readonly options?: { readonly socket?: Record<string, unknown> } | undefined;
  sendCommand(args: string[], options?: object): Promise<unknown>;
  duplicate(overrides?: object): Client;
  connect(): Promise<unknown>;
  destroy(): void;
  subscribe(channels: string[], listener: Listener): Promise<unknown>;
  unsubscribe(channels: string[], listener: Listener): Promise<unknown>;
  sSubscribe(channels: string[], listener: Listener): Promise<unknown>;
  sUnsubscribe(channels: string[], listener: Listener): Promise<unknown>;
  on(event: string, listener: (...args: any[]) => void): unknown;
  once(event: string, listener: (...args: any[]) => void): unknown;
}

/** node-redis's server errors (ErrorReply, SimpleError, BlobError): the server answered. */
function isErrorReply(error: unknown): error is Error {
  for (let proto = error instanceof Error ? Object.getPrototypeOf(error) : null; proto && proto !== Error.prototype; proto = Object.getPrototypeOf(proto)) {
    if ((proto as { constructor?: { name?: string } }).constructor?.name === 'ErrorReply') return true;
  }
  return false;
}

/** A failure as the port reports it: the server's answer as an Error named 'ReplyError', anything else as it is. */
const portError = replyErrors((error) => (isErrorReply(error) ? error.message : undefined));

/**
 * `promise`, or a rejection after `ms`: what node-redis sent is not taken back, but relock stops
 * waiting. Failures reach `failed` (as the port reports them) before they reject.
 */
export function within<T>(promise: Promise<T>, ms: number, what: string, failed?: (error: unknown) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const fail = (error: unknown) => {
      failed?.(error);
      reject(error);
    };
    const timer = setTimeout(() => fail(new Error(`${what}: no answer within ${ms} ms`)), ms);
    timer.unref();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        fail(portError(error));
      },
    );
  });
}

/** A command out: settled by its reply, or rejected once its deadline passed. */
interface Pending {
  readonly at: number;
  readonly what: string;
  readonly reject: (error: unknown) => void;
  done: boolean;
}

/**
 * Answer deadlines of one connection's commands, all `ms` long: a queue in the order they were sent
 * (so the oldest ends first) and one timer for its head, instead of a timer per command (the
 * uncontended path sends two commands per acquire+release).
 */
export class Deadlines {
  readonly #ms: number;
  readonly #queue: Pending[] = [];
  #head = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(ms: number) {
    this.#ms = ms;
  }

  /** `promise`, or a rejection once `ms` passed; failures (as the port reports them) reach `failed` first. */
  track<T>(promise: Promise<T>, what: string, failed: (error: unknown) => void): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const pending: Pending = { at: performance.now() + this.#ms, what, reject: (error) => (failed(error), reject(error)), done: false };
      this.#queue.push(pending);
      this.#timer ??= setTimeout(() => this.#expire(), this.#ms).unref();
      promise.then(
        (value) => {
          pending.done = true;
          resolve(value);
        },
        (error: unknown) => {
          pending.done = true;
          pending.reject(portError(error));
        },
      );
    });
  }

  #expire(): void {
    this.#timer = undefined;
    const now = performance.now();
    for (; this.#head < this.#queue.length; this.#head++) {
      const pending = this.#queue[this.#head]!;
      if (pending.done) continue;
      if (pending.at > now) break;
      pending.done = true;
      pending.reject(new Error(`${pending.what}: no answer within ${this.#ms} ms`));
    }
    // Settled ones are dropped in bulk, not one shift() per command.
    if (this.#head > 64 && this.#head * 2 > this.#queue.length) {
      this.#queue.splice(0, this.#head);
      this.#head = 0;
    }
    const next = this.#queue.slice(this.#head).find((pending) => !pending.done);
    if (next) this.#timer = setTimeout(() => this.#expire(), Math.max(1, next.at - now)).unref();
    else {
      this.#queue.length = 0;
      this.#head = 0;
    }
  }
}

/** How long a subscriber's (re)connection and SUBSCRIBE may take before relock hears a failure. */
const SUBSCRIBE_MS = 5_000;

/**
 * A subscriber connection over a node-redis client relock made: opened at the first command, its
 * messages and state turned into the port's events ('end' also when it stopped reconnecting).
 */
export class NodeRedisSubscriber extends EventEmitter implements SubscriberConnection {
  readonly #create: () => Client | Promise<Client>;
  #client: Client | undefined;
  #opening: Promise<Client> | undefined;
  #ended = false;
  /** Connected once and dropped since: down until 'ready' again. */
  #dropped = false;
  readonly #message: Listener = (message, channel) => this.emit('message', channel, message);
  readonly #smessage: Listener = (message, channel) => this.emit('smessage', channel, message);

  /** `eager`: connects now (a Cluster's node subscriber, as ioredis's); else at the first command. */
  constructor(create: () => Client | Promise<Client>, eager: boolean) {
    super();
    this.#create = create;
    // A failure to open is heard as 'error' and 'end'; a command then rejects with it.
    if (eager) queueMicrotask(() => this.#open().catch(() => undefined));
  }

  get status(): string {
    if (this.#ended) return 'end';
    if (!this.#client) return 'wait';
    return this.#client.isReady ? 'ready' : this.#dropped ? 'reconnecting' : 'connecting';
  }

  #end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.emit('end');
  }

  #open(): Promise<Client> {
    this.#opening ??= this.#connect().catch((error: unknown) => {
      // Never connected (node-redis reported its own failures as 'error'): ended, as a dropped
      // connection would be, so that the transport replaces it.
      if (!this.#client && !this.#ended) this.emit('error', error);
      this.#end();
      throw error;
    });
    return this.#opening;
  }

  async #connect(): Promise<Client> {
    const client = await this.#create();
    if (this.#ended) throw subscriberClosed();
    this.#client = client;
    client.on('error', (error: Error) => {
      this.emit('error', error);
      // Without reconnection (or once it gave up) node-redis closes the client and says no more.
      if (!client.isOpen) this.#end();
    });
    client.on('reconnecting', () => {
      this.#dropped = true;
      this.emit('drop');
    });
    client.on('ready', () => {
      this.#dropped = false;
      this.emit('ready');
    });
    client.on('end', () => this.#end());
    client.on('sharded-channel-moved', () => this.emit('moved'));
    await client.connect();
    return client;
  }

  /**
   * `run` once the connection is open, unless relock stopped waiting before (then nothing is sent).
   * Like relock's ioredis subscribers (`maxRetriesPerRequest` 2), a command fails when the connection
   * dropped twice while it was out (a server that refuses, or closes each new connection), with the
   * last error; else after SUBSCRIBE_MS.
   */
  #command(what: string, run: (client: Client) => Promise<unknown>): Promise<unknown> {
    let late = false;
    let drops = 0;
    let lastError: unknown;
    let fail: (error: unknown) => void = () => undefined;
    const onError = (error: unknown) => (lastError = error);
    const onDrop = () => {
      if (++drops >= 2) fail(lastError ?? new Error(`${what}: the connection dropped twice`));
    };
    this.on('error', onError);
    this.on('drop', onDrop);
    const dropped = new Promise<never>((_, reject) => (fail = reject));
    const answer = within(
      Promise.race([this.#open().then((client) => (late ? undefined : run(client))), dropped]),
      SUBSCRIBE_MS,
      what,
    );
    answer.then(
      () => this.#settled(onError, onDrop),
      () => {
        late = true;
        this.#settled(onError, onDrop);
      },
    );
    return answer;
  }

  #settled(onError: (error: unknown) => void, onDrop: () => void): void {
    this.off('error', onError);
    this.off('drop', onDrop);
  }

  subscribe(...channels: string[]): Promise<unknown> {
    return this.#command('SUBSCRIBE', (client) => client.subscribe(channels, this.#message));
  }

  unsubscribe(...channels: string[]): Promise<unknown> {
    return this.#command('UNSUBSCRIBE', (client) => client.unsubscribe(channels, this.#message));
  }

  ssubscribe(...channels: string[]): Promise<unknown> {
    return this.#command('SSUBSCRIBE', (client) => client.sSubscribe(channels, this.#smessage));
  }

  sunsubscribe(...channels: string[]): Promise<unknown> {
    return this.#command('SUNSUBSCRIBE', (client) => client.sUnsubscribe(channels, this.#smessage));
  }

  ping(): Promise<unknown> {
    return this.#command('PING', (client) => client.sendCommand(['PING']));
  }

  disconnect(): void {
    this.#ended = true;
    if (this.#client) destroyWhenSafe(this.#client);
    // Made after this (its factory was out): #connect() refuses to connect it.
  }
}

/**
 * Destroys `client` now, or as soon as node-redis can: a destroy() while its TCP connect is out
 * leaves that socket open once it connects (node-redis 5 and 6), and the process would never exit.
 * Connected or between attempts: at once; connecting: at its 'ready', or at its next failure.
 */
function destroyWhenSafe(client: Client): void {
  const destroy = () => {
    if (client.isOpen) client.destroy();
  };
  if (client.isReady || !client.isOpen) return destroy();
  client.once('ready', destroy);
  client.once('error', destroy);
}
