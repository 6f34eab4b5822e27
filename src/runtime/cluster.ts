// The choice between sharded and plain pub/sub on a Cluster, made at the first subscription (where
// slots are served is the port's Topology).
import type { Transport, TransportFactory } from './subscriber.ts';

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
