// The GLIDE adapter of the client port: GlideClient and GlideClusterClient of @valkey/valkey-glide
// 2.3 and later (dynamic pub/sub). It imports nothing from GLIDE: it drives the client it is given
// through customCommand. What GLIDE 2.5 does, measured (test/integration/clients/glide.test.ts):
// - A server's error reply rejects with a RequestError whose message GLIDE rewrote: "An error was
//   signalled by the server: - NoScriptError: ..." for the codes it knows, "WRONGTYPE: ..." for the
//   others. The port gives it back as the server sent it ("NOSCRIPT ...", "WRONGTYPE ..."), named
//   'ReplyError'. A RequestError in neither form (a connection that could not be made) is a failure.
// - Every command has the client's `requestTimeout` (GLIDE's default: 250 ms), from its sending to its
//   answer, reconnection included: Redis down or frozen fails it with a TimeoutError then. WAIT gets
//   its own timeout added by GLIDE (a WAIT of 1 s returned after 1 s on a 250 ms client).
// - A command out when its connection drops fails with a ConnectionError and is not sent again (on
//   one server and on a Cluster), so a drop never runs a script twice: `drops` stays 0.
// - A Cluster routes a command with `route: { type: 'primarySlotKey', key }`; its slot map comes from
//   CLUSTER SLOTS. Its own subscriber routes SSUBSCRIBE to each channel's shard and resubscribes after
//   a slot move or a reconnection, so relock subscribes through it (`routesPubSub`).
// - GLIDE keeps the configuration a client was created with (its `config` field): relock's subscriber
//   is a client of the same class created from it (glide-connection.ts).
import { GlideSubscriber, STRING, type Glide } from './glide-connection.ts';
import type { ClientAdapter, RedisPort, Topology } from './port.ts';
import { perClient, Readiness, replyErrors, reporting, scriptArgs, slotMapTopology, slotRanges, strings, waitArgs, type Args } from './shared.ts';

/**
 * A GLIDE client (`GlideClient.createClient()` of @valkey/valkey-glide 2.3 or later): scripts go
 * through `customCommand`; relock subscribes on a GLIDE client of its own, created from the
 * configuration yours was created with (docs/clients.md, "GLIDE").
 *
 * @example
 * ```ts
 * const redis = await GlideClient.createClient({ addresses: [{ host: '10.0.0.1', port: 6379 }], requestTimeout: 1_000 });
 * const client = new LockClient({ redis });
 * ```
 */
export interface GlideClientLike {
  /** How relock sends its scripts and reads. */
  customCommand(...args: any[]): Promise<unknown>;
  /** GLIDE's pub/sub queue: how relock tells a GLIDE client from others. */
  getPubSubMessage(...args: any[]): Promise<unknown>;
  /** Subscriptions that change at run time (GLIDE 2.3): what relock's one subscriber needs. */
  subscribeLazy(...args: any[]): Promise<unknown>;
  /** Whether the subscriptions asked for are in place: relock's subscriber checks its own. */
  getSubscriptions(...args: any[]): Promise<unknown>;
}

/**
 * A GLIDE Cluster client (`GlideClusterClient.createClient()`, GLIDE 2.3 or later): scripts are
 * routed to the primary of their key's slot; relock's own GLIDE Cluster client subscribes, sharded
 * (SSUBSCRIBE) where the servers have it.
 *
 * @example
 * ```ts
 * const redis = await GlideClusterClient.createClient({ addresses: [{ host: '10.0.0.1', port: 7000 }], requestTimeout: 1_000 });
 * const client = new LockClient({ redis });
 * ```
 */
export interface GlideClusterLike extends GlideClientLike {
  /** Sharded subscriptions: relock's subscriber uses them on Redis 7 and later. */
  ssubscribeLazy(...args: any[]): Promise<unknown>;
}

/** The first version whose subscriptions change at run time: relock's one subscriber needs it. */
const GLIDE_DYNAMIC_PUBSUB = '2.3';

/** A GLIDE client of any version: `customCommand` and GLIDE's pub/sub queue (`getPubSubMessage`). */
function isGlideClient(value: object): value is GlideClientLike | GlideClusterLike {
  return typeof (value as Glide).customCommand === 'function' && typeof (value as { getPubSubMessage?: unknown }).getPubSubMessage === 'function';
}

/** A GLIDE Cluster client (GlideClusterClient): it routes commands, `invokeScriptWithRoute`. */
function isGlideCluster(value: object): value is GlideClusterLike {
  return isGlideClient(value) && (value.constructor?.name === 'GlideClusterClient' || typeof (value as { invokeScriptWithRoute?: unknown }).invokeScriptWithRoute === 'function');
}

/**
 * Why relock cannot use this GLIDE client, or undefined when it can: no GLIDE commands (a class of
 * GLIDE's name without them), subscriptions fixed at creation (GLIDE 1.x, 2.0-2.2), or no
 * configuration to open relock's subscriber from.
 */
function glideRefusal(value: object): string | undefined {
  const kind = value.constructor?.name;
  if (!isGlideClient(value)) {
    return `got a ${kind} without GLIDE's customCommand and getPubSubMessage: relock takes @valkey/valkey-glide ${GLIDE_DYNAMIC_PUBSUB} or later (docs/clients.md#glide)`;
  }
  const glide = value as unknown as Glide;
  const refused = (why: string) => `got a GLIDE client (${kind || 'GLIDE'}) relock cannot use: ${why} (docs/clients.md#glide)`;
  if (typeof glide.subscribeLazy !== 'function' || typeof glide.getSubscriptions !== 'function') {
    return refused(`its subscriptions are fixed at creation (GLIDE 1.x or 2.0-2.2): relock subscribes and unsubscribes as waiters come and go, which needs @valkey/valkey-glide ${GLIDE_DYNAMIC_PUBSUB} or later`);
  }
  const addresses = glide.config?.addresses;
  if (!Array.isArray(addresses) || addresses.length === 0) {
    return refused("relock opens its subscriber with the client's own configuration, and this client keeps none (no `config.addresses`)");
  }
  return undefined;
}

/** host:port of a GLIDE client's first address, for messages. */
function glideLabel(value: GlideClientLike | GlideClusterLike): string {
  const first = (value as unknown as Glide).config?.addresses?.[0];
  return first ? `${first.host}:${first.port ?? 6379}` : 'GLIDE';
}

/** GLIDE's names of the server errors it knows (redis-rs's ErrorKind), and the codes the server sent. */
const CODES: Readonly<Record<string, string>> = {
  ResponseError: 'ERR',
  NoScriptError: 'NOSCRIPT',
  PermissionDenied: 'NOPERM',
  Moved: 'MOVED',
  Ask: 'ASK',
  ClusterDown: 'CLUSTERDOWN',
  TryAgain: 'TRYAGAIN',
  BusyLoadingError: 'LOADING',
  MasterDown: 'MASTERDOWN',
  ReadOnly: 'READONLY',
  ExecAbortError: 'EXECABORT',
  CrossSlot: 'CROSSSLOT',
  NotBusy: 'NOTBUSY',
};
const KNOWN = /^An error was signalled by the server: - (\w+): ([\s\S]*)$/;
/** A code GLIDE does not know, as redis-rs prints it: the server's first word, a colon. */
const OTHER = /^([A-Z][A-Z0-9_-]*): ([\s\S]*)$/;

/** The server's reply as it sent it, from a GLIDE error, or undefined when the server did not answer. */
function serverReply(error: unknown): string | undefined {
  if (!(error instanceof Error) || (error.name !== 'RequestError' && error.name !== 'ExecAbortError')) return undefined;
  const known = KNOWN.exec(error.message);
  if (known) return `${CODES[known[1]!] ?? known[1]!.toUpperCase()} ${known[2]}`;
  const other = OTHER.exec(error.message);
  return other ? `${other[1]} ${other[2]}` : undefined;
}

/** A failure as the port reports it: the server's answer as an Error named 'ReplyError', anything else as it is. */
const portError = replyErrors(serverReply);

/** GLIDE gives a RESP3 map as `[{ key, value }]`: relock reads replies as RESP2 gives them (flat arrays). */
function flat(reply: unknown): unknown {
  if (!Array.isArray(reply)) return reply;
  const entry = reply[0] as { key?: unknown; value?: unknown } | undefined;
  if (typeof entry === 'object' && entry !== null && !Array.isArray(entry) && 'key' in entry && 'value' in entry) {
    return (reply as { key: unknown; value: unknown }[]).flatMap(({ key, value }) => [key, flat(value)]);
  }
  return reply.map(flat);
}

/** What the port knows of a client passed in, shared by every LockClient over it. */
interface Watch {
  /** The last failure of a command relock sent that the server did not answer. */
  lastError: Error | undefined;
  /** One server: such a failure came, and no answer since (a Redlock attempt counts the master out). */
  down: boolean;
  probing: boolean;
  /** Ports open over it: nothing is probed for a client no LockClient uses. */
  users: number;
  /** Fired when a client known down answers again. */
  readonly ready: Readiness;
}

/** The client answered: up again, said to whoever waits for it if it was known down. */
function answered(watch: Watch): void {
  if (!watch.down) return;
  watch.down = false;
  watch.ready.fire();
}

const watchOf = perClient((): Watch => ({ lastError: undefined, down: false, probing: false, users: 0, ready: new Readiness() }));
/** How often a GLIDE client known down is PINGed until it answers (GLIDE reports no reconnection). */
const PROBE_MS = 200;

/** PINGs `client` until it answers, while it is known down and some LockClient uses it. */
function probe(client: Glide, watch: Watch): void {
  if (watch.probing) return;
  watch.probing = true;
  const up = () => {
    watch.probing = false;
    answered(watch);
  };
  const next = () =>
    setTimeout(() => {
      if (!watch.down || watch.users === 0 || client.isClosed === true) return void (watch.probing = false);
      // Any answer, a refusal included, is the server's: the connection is back.
      client.customCommand(['PING'], { decoder: STRING }).then(up, (error: unknown) => (serverReply(error) === undefined ? next() : up()));
    }, PROBE_MS).unref();
  next();
}

/**
 * The port over a GLIDE client or Cluster client passed in: relock never closes it nor listens on it
 * (GLIDE has no events). `onError` hears the errors of relock's subscriber.
 */
function glidePort(given: GlideClientLike | GlideClusterLike, onError: (error: Error) => void): RedisPort {
  const client = given as unknown as Glide;
  const cluster = isGlideCluster(given);
  const watch = watchOf(client);
  watch.users++;
  let open = true;
  const send = (args: string[], route?: unknown): Promise<unknown> =>
    client.customCommand(args, route === undefined ? { decoder: STRING } : { route, decoder: STRING }).then(
      (reply) => {
        answered(watch);
        return reply;
      },
      (error: unknown) => {
        const failure = portError(error);
        if (failure !== error) answered(watch);
        else if (error instanceof Error && error.name !== 'ClosingError') {
          watch.lastError = error;
          // GLIDE says nothing of a lost connection: on one server, a command that got no answer says it.
          if (!cluster) {
            watch.down = true;
            probe(client, watch);
          }
        }
        throw failure;
      },
    );
  // On a Cluster: the primary of the key's slot, or any node for a command without a key.
  const at = (key: string | undefined) => (!cluster ? undefined : key === undefined ? 'randomNode' : { type: 'primarySlotKey', key });
  const script = (head: 'EVALSHA' | 'EVAL', body: string, keys: readonly string[], args: Args) => send(scriptArgs(head, body, keys, args), at(keys[0]));
  return {
    cluster,
    routesPubSub: cluster,
    // GLIDE reports no connection state: a client is down from a command that got no answer (on one
    // server) until a command or a PING is answered, and ended when closed.
    get status() {
      return client.isClosed === true ? 'end' : watch.down ? 'reconnecting' : 'ready';
    },
    // A command out when its connection dropped fails and is never sent again.
    drops: 0,
    get lastError() {
      return watch.lastError;
    },
    onReady: (listener) => watch.ready.add(listener),
    topology: cluster ? glideTopology((args) => send(args, 'randomNode')) : undefined,
    evalsha: (sha1, keys, args) => script('EVALSHA', sha1, keys, args),
    eval: (source, keys, args) => script('EVAL', source, keys, args),
    command: async (name, args, routedByKey) => flat(await send([name, ...strings(args)], at(routedByKey ? String(args[0]) : undefined))),
    // GLIDE adds the WAIT's own timeout to the request timeout; on a Cluster it goes to the master
    // that took the key, on the connection that wrote it (one multiplexed connection per node).
    waitReplicas: async (key, replicas, timeoutMs) => Number(await send(waitArgs(replicas, timeoutMs), at(key))),
    openSubscriber: () => reporting(new GlideSubscriber(client, cluster, portError), onError),
    openNode: () => {
      throw new Error("a GLIDE Cluster subscribes through openSubscriber(): its client routes the channels");
    },
    close: () => {
      if (open) watch.users--;
      open = false;
      return Promise.resolve();
    },
  };
}

/** The slot map of a GLIDE Cluster, read with CLUSTER SLOTS at each refresh() (addresses as the servers announce them). */
function glideTopology(ask: (args: string[]) => Promise<unknown>): Topology {
  let ranges: ReturnType<typeof slotRanges> = [];
  const node = ({ host, port }: { readonly host: string; readonly port: number }) => `${host}:${port}`;
  return slotMapTopology({
    owner: (slot) => {
      const range = ranges.find(({ from, to }) => slot >= from && slot <= to);
      return range && node(range);
    },
    // Each master once, in the order of its first range.
    masters: () => [...new Map(ranges.map(({ host, port }) => [node({ host, port }), { host, port }])).values()],
    async read() {
      ranges = slotRanges(await ask(['CLUSTER', 'SLOTS']));
    },
  });
}

/** The GLIDE family (@valkey/valkey-glide 2.3 and later): a client or a Cluster client passed in. */
export const glideAdapter: ClientAdapter<GlideClientLike | GlideClusterLike> = {
  what: 'a GLIDE 2.3+ client',
  // A class of GLIDE's name without its commands is one too: refused, with why.
  is: (value): value is GlideClientLike | GlideClusterLike => isGlideClient(value) || /^Glide(Cluster)?Client$/.test(value.constructor?.name ?? ''),
  refusal: glideRefusal,
  cluster: isGlideCluster,
  label: glideLabel,
  port: glidePort,
};
