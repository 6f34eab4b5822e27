// What the GLIDE adapter (port/glide.ts) drives: the client's shape, and relock's subscriber over
// GLIDE: a client of the user's client's class, created from the configuration that client keeps,
// with what relock needs whatever it says (RESP3, which GLIDE's pub/sub requires; reads from
// primaries; strings; a lazy connection; a message callback). GLIDE 2.3+ subscribes and unsubscribes
// at run time, reconnects by itself and resubscribes what it was asked to (and on a Cluster follows
// slot moves), but says nothing when it did: what was published meanwhile is lost. A heartbeat
// notices it: the connections' ids (HELLO, which no ACL refuses) changed, or a subscription was
// missing, and the port's 'ready' then makes every waiter try again.
// On a Cluster, GLIDE 2.5 leaves a sharded subscription where it is after a failover of its shard:
// on the old master, a replica now, which still takes SSUBSCRIBE and hears SPUBLISH, but which the
// new master's receiver counts (PUBSUB SHARDNUMSUB, the fair lock's grants) never include. So every
// second the heartbeat compares the slot map (CLUSTER SLOTS) with the subscriber's own connection to
// each master serving a channel (CLIENT INFO's ssub count), and moves what is missing there.
import { EventEmitter } from 'node:events';
import { debuglog } from 'node:util';
import { keySlot } from './slot.ts';
import type { SubscriberConnection } from './port.ts';
import { slotRanges, subscriberClosed } from './shared.ts';

/** The configuration a GLIDE client keeps (its `config` field): what relock's subscriber is made from. */
interface GlideConfig {
  readonly addresses?: readonly { readonly host: string; readonly port?: number }[];
  readonly [option: string]: unknown;
}

type Modes = Partial<Record<number, ReadonlySet<unknown>>>;
/** GLIDE's form of a RESP3 map: `[{ key, value }]`. */
interface Entry {
  readonly key: unknown;
  readonly value: unknown;
}

/** What relock calls on a GLIDE client (GlideClient, GlideClusterClient of GLIDE 2.3 and later). */
export interface Glide {
  /** The options it was created with (private in GLIDE's types, a plain field at run time). */
  readonly config?: GlideConfig;
  readonly isClosed?: boolean;
  customCommand(args: string[], options?: object): Promise<unknown>;
  subscribe?(channels: Iterable<string>, timeoutMs: number): Promise<void>;
  subscribeLazy?(channels: Iterable<string>): Promise<void>;
  unsubscribeLazy?(channels: Iterable<string>): Promise<void>;
  ssubscribe?(channels: Iterable<string>, timeoutMs: number): Promise<void>;
  sunsubscribe?(channels: Iterable<string>, timeoutMs: number): Promise<void>;
  sunsubscribeLazy?(channels: Iterable<string>): Promise<void>;
  getSubscriptions?(): Promise<{ readonly desiredSubscriptions: Modes; readonly actualSubscriptions: Modes }>;
  close(message?: string): void;
}

/** GLIDE's createClient, a static method of the client's class. */
interface Factory {
  createClient?(config: object): Promise<Glide>;
}

const log = debuglog('relock:subscriber');

/** GLIDE's ProtocolVersion.RESP3. */
const RESP3 = 0;
/** GLIDE's Decoder.String: relock reads strings whatever the client's `defaultDecoder`. */
export const STRING = 1;
/** How long a SUBSCRIBE may take to be in place on the server. */
const SUBSCRIBE_MS = 5_000;
/** The subscriber's own request timeout (its heartbeat and PING). */
const REQUEST_MS = 2_000;
/** How often GLIDE compares the subscriptions asked for with the server's (about 3 s when left unset). */
const RECONCILE_MS = 500;
/** How often a subscriber with channels checks its subscriptions (GLIDE's own record: no I/O). */
const HEARTBEAT_MS = 250;
/** Every how many checks it asks the server for its connections' ids (HELLO), and checks where its sharded subscriptions are: once a second. */
const HELLO_EVERY = 4;
/** Which of those checks looks for sharded subscriptions off their slot's master (between two HELLOs). */
const PLACEMENT_AT = 2;
/**
 * How long the connection to a slot's master may take to answer CLIENT INFO before its channels
 * count as misplaced (GLIDE has no connection to a replica just promoted until it reads the slot
 * map again: such a command waits out the request timeout). Moving channels that were in place
 * only makes waiters try again.
 */
const PLACED_MS = 1_000;

/** GLIDE's PubSubChannelModes: Exact, and on a Cluster Sharded. */
const EXACT = 0;
const SHARDED = 2;

/** A subscriber connection over a GLIDE client relock creates at the first subscription and closes in disconnect(). */
export class GlideSubscriber extends EventEmitter implements SubscriberConnection {
  readonly #user: Glide;
  readonly #cluster: boolean;
  /** A failure as the port reports it (the server's replies named 'ReplyError'). */
  readonly #failure: (error: unknown) => unknown;
  #client: Promise<Glide> | undefined;
  #made: Glide | undefined;
  #ended = false;
  #state: 'wait' | 'ready' | 'reconnecting' = 'wait';
  /** Subscribed channels, and which of them are sharded ('smessage'). */
  readonly #channels = new Set<string>();
  readonly #sharded = new Set<string>();
  #beat: NodeJS.Timeout | undefined;
  /** The HELLO replies of the last heartbeat: a connection id that changed is a new connection. */
  #seen: string | undefined;
  /** Messages may have been lost since the last 'ready'. */
  #lost = false;
  #beats = 0;
  /** A placement check (or the move it found needed) is under way. */
  #placing = false;
  /** The servers refused CLIENT INFO or CLUSTER SLOTS (an ACL): placement is not checked. */
  #unplaceable = false;

  constructor(user: Glide, cluster: boolean, failure: (error: unknown) => unknown) {
    super();
    this.#user = user;
    this.#cluster = cluster;
    this.#failure = failure;
  }

  get status(): string {
    return this.#ended ? 'end' : this.#state;
  }

  #open(): Promise<Glide> {
    this.#client ??= this.#create().then(
      (client) => {
        if (this.#ended) {
          client.close();
          throw subscriberClosed();
        }
        return (this.#made = client);
      },
      (error: unknown) => {
        // A configuration GLIDE refuses: said once, and tried again at the next subscription.
        this.#client = undefined;
        this.emit('error', error);
        throw error;
      },
    );
    return this.#client;
  }

  #create(): Promise<Glide> {
    const { createClient } = this.#user.constructor as Factory;
    if (typeof createClient !== 'function') return Promise.reject(new TypeError('the GLIDE client has no createClient() to open a subscriber with'));
    // The user's own subscriptions and client-side cache are theirs; everything else (addresses,
    // credentials, TLS, database, timeouts, backoff, address resolver) is the user's client's.
    const { pubsubSubscriptions: _subscriptions, clientSideCache: _cache, ...config } = this.#user.config ?? {};
    return createClient.call(this.#user.constructor, {
      ...config,
      protocol: RESP3,
      readFrom: 'primary',
      defaultDecoder: STRING,
      lazyConnect: true,
      requestTimeout: REQUEST_MS,
      // GLIDE puts back a subscription it lost (a slot moved, a failover) at its next reconciliation.
      advancedConfiguration: { ...(config['advancedConfiguration'] as object | undefined), pubsubReconciliationIntervalMs: RECONCILE_MS },
      pubsubSubscriptions: { channelsAndPatterns: {}, callback: (message: { channel: unknown; message: unknown }) => this.#message(message) },
    });
  }

  #message({ channel, message }: { channel: unknown; message: unknown }): void {
    const name = String(channel);
    this.emit(this.#sharded.has(name) ? 'smessage' : 'message', name, String(message));
  }

  /** `run` on the subscriber client, opened first; after disconnect() nothing is sent. */
  async #command<T>(run: (client: Glide) => Promise<T>): Promise<T> {
    if (this.#ended) throw subscriberClosed();
    const client = await this.#open();
    if (this.#ended) throw subscriberClosed();
    try {
      return await run(client);
    } catch (error) {
      throw this.#failure(error);
    }
  }

  /** SUBSCRIBE or SSUBSCRIBE, in place on the server when it resolves; a failure leaves no new channel asked for. */
  #subscribe(channels: string[], sharded: boolean): Promise<unknown> {
    return this.#command(async (client) => {
      const fresh = channels.filter((channel) => !this.#channels.has(channel));
      // The connection before the first subscription: the heartbeat's first reference (a reconnection
      // after it shows as a new id; one before the SUBSCRIBE only makes waiters try once more).
      this.#seen ??= await this.#hello(client);
      try {
        await (sharded ? client.ssubscribe!(channels, SUBSCRIBE_MS) : client.subscribe!(channels, SUBSCRIBE_MS));
      } catch (error) {
        // GLIDE keeps trying what it was asked for: a channel nobody waits on is taken back.
        if (fresh.length > 0) (sharded ? client.sunsubscribeLazy!(fresh) : client.unsubscribeLazy!(fresh)).catch(() => undefined);
        throw error;
      }
      for (const channel of channels) {
        this.#channels.add(channel);
        if (sharded) this.#sharded.add(channel);
      }
      this.#up();
    });
  }

  #unsubscribe(channels: string[], sharded: boolean): Promise<unknown> {
    for (const channel of channels) {
      this.#channels.delete(channel);
      this.#sharded.delete(channel);
    }
    if (!this.#made) return Promise.resolve();
    return this.#command((client) => (sharded ? client.sunsubscribeLazy!(channels) : client.unsubscribeLazy!(channels)));
  }

  subscribe(...channels: string[]): Promise<unknown> {
    return this.#subscribe(channels, false);
  }

  unsubscribe(...channels: string[]): Promise<unknown> {
    return this.#unsubscribe(channels, false);
  }

  ssubscribe(...channels: string[]): Promise<unknown> {
    return this.#subscribe(channels, true);
  }

  sunsubscribe(...channels: string[]): Promise<unknown> {
    return this.#unsubscribe(channels, true);
  }

  ping(): Promise<unknown> {
    return this.#command((client) => client.customCommand(['PING'], { decoder: STRING }));
  }

  disconnect(): void {
    this.#ended = true;
    clearTimeout(this.#beat);
    this.#beat = undefined;
    this.#made?.close();
    // Still being created: #open() closes it when it comes.
  }

  /** A subscription is in place: connected. The first time, 'ready'; then the heartbeat watches. */
  #up(): void {
    if (this.#state === 'wait') {
      this.#state = 'ready';
      this.emit('ready');
    }
    this.#heartbeatSoon();
  }

  #heartbeatSoon(): void {
    if (this.#beat || this.#ended) return;
    this.#beat = setTimeout(() => {
      void this.#heartbeat().finally(() => {
        this.#beat = undefined;
        // Beats while there are channels, and until a lost connection is back.
        if (this.#channels.size > 0 || this.#state === 'reconnecting') this.#heartbeatSoon();
      });
    }, HEARTBEAT_MS).unref();
  }

  /**
   * Whether a channel whose subscription was confirmed is not in place on the server, as GLIDE knows
   * it (one being subscribed or unsubscribed now is not counted: GLIDE lists it as asked for, not yet in place).
   */
  #missingFrom(actual: Modes): boolean {
    for (const channel of this.#channels) {
      if (actual[this.#sharded.has(channel) ? SHARDED : EXACT]?.has(channel) !== true) return true;
    }
    return false;
  }

  /**
   * The connection ids the server gives in HELLO (every primary's on a Cluster, by address, sorted:
   * GLIDE lists the nodes' replies in the order they came): a new connection has a new id.
   */
  async #hello(client: Glide): Promise<string> {
    const reply = await client.customCommand(['HELLO'], this.#cluster ? { route: 'allPrimaries', decoder: STRING } : { decoder: STRING });
    const idOf = (hello: unknown) => String((hello as readonly Entry[] | undefined)?.find((entry) => entry.key === 'id')?.value);
    if (!this.#cluster) return idOf(reply);
    return (reply as readonly Entry[])
      .map(({ key, value }) => `${String(key)}=${idOf(value)}`)
      .sort()
      .join(' ');
  }

  /**
   * Messages may have been lost when a connection was down, was replaced (its id changed), or a
   * subscription was missing (a slot moved, a failover, GLIDE resubscribing). Once every confirmed
   * subscription is in place again, 'ready': relock subscribes again and lets every waiter try again.
   * (GLIDE's subscribe resolves at once for a channel it already wants, in place or not: a 'ready'
   * before then would have the waiters try again before they can hear the next release.)
   */
  async #heartbeat(): Promise<void> {
    const client = this.#made;
    if (!client || this.#ended) return;
    let seen: string;
    let missing: boolean;
    try {
      const hello = this.#beats++ % HELLO_EVERY === 0 || this.#state === 'reconnecting' || this.#seen === undefined;
      seen = hello ? await this.#hello(client) : this.#seen!;
      missing = client.getSubscriptions ? this.#missingFrom((await client.getSubscriptions()).actualSubscriptions) : false;
    } catch (error) {
      if (this.#ended) return;
      if (this.#state !== 'reconnecting') {
        this.#state = 'reconnecting';
        this.#lost = true;
        this.emit('error', error);
      }
      return;
    }
    if (this.#ended) return;
    if ((this.#seen !== undefined && seen !== this.#seen) || missing) this.#lost = true;
    [this.#seen, this.#state] = [seen, 'ready'];
    if (this.#lost && !missing) {
      this.#lost = false;
      this.emit('ready');
    }
    if (this.#cluster && this.#sharded.size > 0 && this.#beats % HELLO_EVERY === PLACEMENT_AT) this.#checkPlacement(client);
  }

  /**
   * Moves the sharded subscriptions that are not on the master serving their slot now (a failover
   * left them on a replica): unsubscribed there and subscribed again, which GLIDE routes by its slot
   * map. Messages may have been lost meanwhile: the next heartbeat with all in place says 'ready'.
   */
  #checkPlacement(client: Glide): void {
    if (this.#placing || this.#unplaceable) return;
    this.#placing = true;
    void this.#misplaced(client)
      .then(async (misplaced) => {
        if (misplaced.length === 0 || this.#ended) return;
        log('%d sharded subscriptions are not on the master of their slot; moving them', misplaced.length);
        this.#lost = true;
        // GLIDE's slot map may still name the old master: a keyed command there is answered MOVED,
        // which has GLIDE read the map again before the channels are routed anew.
        await Promise.all(misplaced.map((channel) => client.customCommand(['EXISTS', channel], { route: { type: 'primarySlotKey', key: channel }, decoder: STRING }).catch(() => undefined)));
        await (client.sunsubscribe ? client.sunsubscribe(misplaced, SUBSCRIBE_MS) : client.sunsubscribeLazy!(misplaced));
        // Only what is still wanted (relock may have unsubscribed some meanwhile).
        const wanted = misplaced.filter((channel) => this.#sharded.has(channel));
        if (wanted.length > 0 && !this.#ended) await client.ssubscribe!(wanted, SUBSCRIBE_MS);
        log('moved %d sharded subscriptions', wanted.length);
      })
      .catch((error: unknown) => {
        // A refusal (an ACL without CLUSTER SLOTS) ends the checks; a connection failure is the
        // heartbeat's to report, and the next check tries again.
        const failure = this.#failure(error) as Error;
        if (failure.name === 'ReplyError') this.#unplaceable = true;
        log('checking where the sharded subscriptions are failed: %s', failure.message);
      })
      .finally(() => (this.#placing = false));
  }

  /**
   * The sharded channels not confirmed on the connection to the master of their slot, per CLUSTER
   * SLOTS: that connection's CLIENT INFO counts fewer shard subscriptions than relock has there, or
   * it does not answer within PLACED_MS.
   */
  async #misplaced(client: Glide): Promise<string[]> {
    const ranges = slotRanges(await client.customCommand(['CLUSTER', 'SLOTS'], { route: 'randomNode', decoder: STRING }));
    const byMaster = new Map<string, { readonly host: string; readonly port: number; readonly channels: string[] }>();
    for (const channel of this.#sharded) {
      const slot = keySlot(channel);
      const range = ranges.find(({ from, to }) => slot >= from && slot <= to);
      if (!range) continue;
      const at = `${range.host}:${range.port}`;
      let entry = byMaster.get(at);
      if (!entry) byMaster.set(at, (entry = { host: range.host, port: range.port, channels: [] }));
      entry.channels.push(channel);
    }
    const misplaced: string[] = [];
    await Promise.all(
      [...byMaster.values()].map(async ({ host, port, channels }) => {
        let info: string;
        let timer: NodeJS.Timeout | undefined;
        try {
          const late = new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(new Error(`CLIENT INFO on ${host}:${port} got no answer within ${PLACED_MS} ms`)), PLACED_MS).unref();
          });
          info = String(await Promise.race([client.customCommand(['CLIENT', 'INFO'], { route: { type: 'routeByAddress', host, port }, decoder: STRING }), late]));
        } catch (error) {
          // A refusal is the server's answer (an ACL without CLIENT INFO): nothing to check with.
          if ((this.#failure(error) as Error).name === 'ReplyError') this.#unplaceable = true;
          else misplaced.push(...channels);
          return;
        } finally {
          clearTimeout(timer);
        }
        const ssub = / ssub=(\d+)/.exec(info);
        if (ssub && Number(ssub[1]) < channels.length) misplaced.push(...channels);
      }),
    );
    return misplaced;
  }
}
