// The GLIDE adapter of the client port: GlideClient and GlideClusterClient of @valkey/valkey-glide
// 2.3 and later (dynamic pub/sub). It imports nothing from GLIDE: it drives the client it is given
// through customCommand. What GLIDE 2.5 does, measured (test/integration/glide.test.ts):
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
import type { GlideClientLike, GlideClusterLike } from '../options.ts';
import { GlideSubscriber, type Glide } from './glide-connection.ts';
import { Readiness, type RedisPort, type Topology } from './port.ts';

export type { Glide };

/** GLIDE's Decoder.String: relock reads strings whatever the client's `defaultDecoder`. */
const STRING = 1;
/** The first version whose subscriptions change at run time: relock's one subscriber needs it. */
export const GLIDE_DYNAMIC_PUBSUB = '2.3';

type Args = readonly (string | number)[];

/** A GLIDE client of any version: `customCommand` and GLIDE's pub/sub queue (`getPubSubMessage`). */
export function isGlideClient(value: object): value is GlideClientLike | GlideClusterLike {
  return typeof (value as Glide).customCommand === 'function' && typeof (value as { getPubSubMessage?: unknown }).getPubSubMessage === 'function';
}

/** A GLIDE Cluster client (GlideClusterClient): it routes commands, `invokeScriptWithRoute`. */
export function isGlideCluster(value: object): value is GlideClusterLike {
  return isGlideClient(value) && (value.constructor?.name === 'GlideClusterClient' || typeof (value as { invokeScriptWithRoute?: unknown }).invokeScriptWithRoute === 'function');
}

/**
 * Why relock cannot use this GLIDE client, or undefined when it can: subscriptions fixed at creation
 * (GLIDE 1.x, 2.0-2.2), or no configuration to open relock's subscriber from.
 */
export function glideRefusal(value: object): string | undefined {
  const glide = value as Glide;
  if (typeof glide.subscribeLazy !== 'function' || typeof glide.getSubscriptions !== 'function') {
    return `its subscriptions are fixed at creation (GLIDE 1.x or 2.0-2.2): relock subscribes and unsubscribes as waiters come and go, which needs @valkey/valkey-glide ${GLIDE_DYNAMIC_PUBSUB} or later`;
  }
  const addresses = glide.config?.addresses;
  if (!Array.isArray(addresses) || addresses.length === 0) {
    return "relock opens its subscriber with the client's own configuration, and this client keeps none (no `config.addresses`)";
  }
  return undefined;
}

/** host:port of a GLIDE client's first address, for messages. */
export function glideLabel(value: GlideClientLike | GlideClusterLike): string {
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
export function serverReply(error: unknown): string | undefined {
  if (!(error instanceof Error) || (error.name !== 'RequestError' && error.name !== 'ExecAbortError')) return undefined;
  const known = KNOWN.exec(error.message);
  if (known) return `${CODES[known[1]!] ?? known[1]!.toUpperCase()} ${known[2]}`;
  const other = OTHER.exec(error.message);
  return other ? `${other[1]} ${other[2]}` : undefined;
}

/** A failure as the port reports it: the server's answer as an Error named 'ReplyError', anything else as it is. */
export function portError(error: unknown): unknown {
  const reply = serverReply(error);
  if (reply === undefined) return error;
  const named = new Error(reply, { cause: error });
  named.name = 'ReplyError';
  return named;
}

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

const watches = new WeakMap<object, Watch>();
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

const strings = (args: Args): string[] => args.map(String);

/**
 * The port over a GLIDE client or Cluster client passed in: relock never closes it nor listens on it
 * (GLIDE has no events). `onError` hears the errors of relock's subscriber.
 */
export function glidePort(given: GlideClientLike | GlideClusterLike, onError: (error: Error) => void): RedisPort {
  const client = given as unknown as Glide;
  const cluster = isGlideCluster(given);
  let found = watches.get(client);
  if (!found) watches.set(client, (found = { lastError: undefined, down: false, probing: false, users: 0, ready: new Readiness() }));
  const watch = found;
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
  const script = (head: string, body: string, keys: readonly string[], args: Args) => send([head, body, String(keys.length), ...keys, ...strings(args)], at(keys[0]));
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
    waitReplicas: async (key, replicas, timeoutMs) => Number(await send(['WAIT', String(replicas), String(timeoutMs)], at(key))),
    openSubscriber: () => {
      const subscriber = new GlideSubscriber(client, cluster, portError);
      subscriber.on('error', (error: Error) => onError(error));
      return subscriber;
    },
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
  const watchers = new Set<() => void>();
  let ranges: { readonly from: number; readonly to: number; readonly node: string }[] = [];
  return {
    owner: (slot) => ranges.find((range) => slot >= range.from && slot <= range.to)?.node,
    async refresh() {
      const reply = await ask(['CLUSTER', 'SLOTS']);
      ranges = (Array.isArray(reply) ? reply : []).flatMap((row: unknown) => {
        const [from, to, master] = row as [number, number, [string, number] | undefined];
        return master ? [{ from: Number(from), to: Number(to), node: `${master[0]}:${master[1]}` }] : [];
      });
      for (const watcher of watchers) watcher();
    },
    watch(listener) {
      watchers.add(listener);
      return () => void watchers.delete(listener);
    },
    masters: () =>
      [...new Set(ranges.map((range) => range.node))].map((node) => {
        const at = node.lastIndexOf(':');
        return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
      }),
  };
}
