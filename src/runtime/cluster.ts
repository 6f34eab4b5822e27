// What relock reads of an ioredis Cluster for sharded pub/sub: where slots are served (its own slot
// map, NAT-mapped), and the choice between sharded and plain pub/sub.
import type { Transport, TransportFactory } from './subscriber.ts';

/** Where slots are served: the Cluster's own map, refreshed on demand. */
export interface Topology {
  /** The master serving `slot`, as `host:port`, if known. */
  owner(slot: number): string | undefined;
  /** Asks the cluster for its slot map again. */
  refresh(): Promise<void>;
  /** Calls `listener` after each refresh of the map (ioredis refreshes it every few seconds too); returns the unsubscribe. */
  watch(listener: () => void): () => void;
}

/** The parts of an ioredis Cluster the topology reads (ioredis 5 and 6 both have them). */
interface ClusterLike {
  readonly slots?: readonly (readonly string[] | undefined)[];
  /** The address a node is reached at, through the Cluster's natMap (ioredis 5 and 6). */
  natMapper?(key: string): { readonly host: string; readonly port: number };
  refreshSlotsCache?(callback: (error?: Error | null) => void): void;
  on(event: 'refresh', listener: () => void): unknown;
  off(event: 'refresh', listener: () => void): unknown;
}

/**
 * The topology of an ioredis Cluster, from its slot cache. The cache holds NAT-mapped addresses but
 * for the slots of a MOVED reply, which ioredis writes there as Redis sent them (redis/ioredis#1582):
 * each address goes through the natMap again (a mapped one is no key of it and stays as it is).
 */
export function clusterTopology(cluster: unknown): Topology {
  const c = cluster as ClusterLike;
  const reached = (node: string | undefined) => {
    if (node === undefined || typeof c.natMapper !== 'function') return node;
    const { host, port } = c.natMapper(node);
    return `${host}:${port}`;
  };
  return {
    owner: (slot) => reached(c.slots?.[slot]?.[0]),
    refresh: () =>
      new Promise<void>((resolve) => {
        if (typeof c.refreshSlotsCache !== 'function') return resolve();
        c.refreshSlotsCache(() => resolve());
      }),
    watch: (listener) => {
      c.on('refresh', listener);
      return () => void c.off('refresh', listener);
    },
  };
}

/**
 * On a Cluster: sharded pub/sub when the servers have it, else one SUBSCRIBE connection (the
 * cluster bus carries PUBLISH everywhere). Decided at the first subscription, after the probe.
 */
export function clusterTransport(sharded: () => Promise<boolean>, shards: TransportFactory, plain: TransportFactory): TransportFactory {
  return (events) => {
    let chosen: Promise<Transport> | undefined;
    let transport: Transport | undefined;
    let closed = false;
    const choose = () =>
      (chosen ??= sharded().then(
        (yes) => {
          transport = (yes ? shards : plain)(events);
          // Closed while the probe was out: nothing may stay open (or listen on the user's Cluster).
          if (closed) transport.close();
          return transport;
        },
        (error: unknown) => {
          chosen = undefined;
          throw error;
        },
      ));
    return {
      async subscribe(channel) {
        const picked = await choose();
        if (closed) return;
        await picked.subscribe(channel);
      },
      unsubscribe: (channel) => transport?.unsubscribe(channel),
      close() {
        closed = true;
        transport?.close();
      },
    };
  };
}
