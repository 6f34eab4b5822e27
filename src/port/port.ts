// The client port: everything relock asks of a Redis client, in relock's terms. The runtime, the
// topologies and the primitives reach Redis only through it; one adapter per client family
// implements it (ioredis.ts, which serves iovalkey too; node-redis.ts; glide.ts), clients.ts lists
// them, and only src/port/ imports a client library.

/** A connection relock opened for pub/sub alone: its waiters' one subscriber, or one per shard. */
export interface SubscriberConnection {
  /** 'ready' while commands go out at once; 'reconnecting', 'close' or 'end' while it is down. */
  readonly status: string;
  subscribe(...channels: string[]): Promise<unknown>;
  unsubscribe(...channels: string[]): Promise<unknown>;
  ssubscribe(...channels: string[]): Promise<unknown>;
  sunsubscribe(...channels: string[]): Promise<unknown>;
  ping(): Promise<unknown>;
  /** Messages of SUBSCRIBE ('message') and SSUBSCRIBE ('smessage') channels. */
  on(event: 'message' | 'smessage', listener: (channel: string, message: string) => void): unknown;
  /**
   * 'ready': connected (again); 'end': closed for good; 'moved': the server unsubscribed a sharded
   * channel whose slot it no longer serves.
   */
  on(event: 'ready' | 'end' | 'moved', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  disconnect(): void;
}

/** Whether a connection in this state is known down ('reconnecting', 'close', 'end'): a command to it fails or waits. */
export function isDown(status: string): boolean {
  return status === 'reconnecting' || status === 'close' || status === 'end';
}

/** Where a Cluster serves its slots, as its client knows it. */
export interface Topology {
  /** The master serving `slot`, as `host:port` the client reaches it at, if known. */
  owner(slot: number): string | undefined;
  /** Asks the cluster for its slot map again. */
  refresh(): Promise<void>;
  /** Calls `listener` after each refresh of the map; returns the unsubscribe. */
  watch(listener: () => void): () => void;
  /** The masters the client knows now. */
  masters(): readonly { readonly host: string; readonly port: number }[];
}

/**
 * A command connection: one server, or a whole Cluster behind one face. Its promises reject with the
 * server's own reply as an Error named 'ReplyError' (relock's scripts report their outcomes so), and
 * with any other Error when the connection failed.
 */
export interface RedisPort {
  /** A Cluster: one slot per script call, sharded channels, slot routing. */
  readonly cluster: boolean;
  /**
   * A Cluster client whose own subscriber routes each channel to its shard and follows slot moves
   * (GLIDE): relock subscribes through one openSubscriber() connection (SSUBSCRIBE when the servers
   * have sharded pub/sub) instead of a connection per master of its own.
   */
  readonly routesPubSub: boolean;
  /** 'ready' while commands go out at once (else they queue or fail). */
  readonly status: string;
  /**
   * How often a connection that commands went out on has closed so far: a change while a command was
   * out means the client may have sent it twice (ioredis resends what was unanswered).
   */
  readonly drops: number;
  /** The last connection error seen, on a connection relock made. */
  readonly lastError: Error | undefined;
  /**
   * Calls `listener` each time the connection is ready again after it was down (GLIDE: a client
   * relock took for down answered again); returns the unsubscribe. A port that cannot tell (a
   * Cluster whose node connections come and go on their own) may never call it: who waits for it
   * also tries again on a timer.
   */
  onReady(listener: () => void): () => void;
  /** A Cluster's slot map and masters; undefined on one server. */
  readonly topology: Topology | undefined;
  /** EVALSHA on the node of the keys' slot. */
  evalsha(sha1: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown>;
  /** EVAL, after the server answered NOSCRIPT. */
  eval(source: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown>;
  /** A plain command; on a Cluster routed by its first argument taken as a key, else to any node. */
  command(name: string, args: readonly (string | number)[], routedByKey: boolean): Promise<unknown>;
  /** WAIT on the connection that wrote `key`: how many replicas acknowledged, after at most `timeoutMs`. */
  waitReplicas(key: string, replicas: number, timeoutMs: number): Promise<number>;
  /**
   * A new subscriber connection with relock's settings (lazily connecting, resubscribed by relock):
   * one server's, or a whole Cluster's when `routesPubSub`.
   */
  openSubscriber(): SubscriberConnection;
  /** On a Cluster: a new subscriber connection to one node, which does not reconnect by itself. */
  openNode(host: string, port: number): SubscriberConnection;
  /** Closes the connection if relock opened it; a client passed in is left open. */
  close(): Promise<void>;
}

/**
 * One client family: how relock tells a client of it from any other value, and the port over one.
 * clients.ts lists them; adding a client is one adapter there.
 */
export interface ClientAdapter<C extends object = object> {
  /** What a client of the family is, for messages: 'a node-redis client or Cluster'. */
  readonly what: string;
  /** Whether `value` is a client of this family (or says it is: refusal() tells why relock cannot use it). */
  is(value: object): value is C;
  /** Why relock cannot use this client, as the end of a message ('got ...'), or undefined when it can. */
  refusal?(client: C): string | undefined;
  /** The ioredis `keyPrefix` the client adds to keys (relock refuses one), if it has one. */
  keyPrefix?(client: C): unknown;
  /** Whether it is a Cluster client. */
  cluster(client: C): boolean;
  /** host:port (or the socket path) it reaches, for messages. */
  label(client: C): string;
  /**
   * The port over it: close() leaves it open. `onError` hears the errors of the connections the
   * port opens.
   */
  port(client: C, onError: (error: Error) => void): RedisPort;
}
