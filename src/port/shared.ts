// What the adapters share, written once: the arguments of a command, the server's error replies
// named as the port reports them, a record per client, a subscriber connection's errors heard, a
// Cluster's topology over a slot map, and CLUSTER SLOTS read. Nothing here knows a client library.
import type { Topology } from './port.ts';

/** A command's arguments after its name, as the port takes them. */
export type Args = readonly (string | number)[];

/** The arguments as strings, as a client sends them. */
export const strings = (args: Args): string[] => args.map(String);

/** EVALSHA (the script's SHA1) or EVAL (its source): the script, the number of keys, the keys, the arguments. */
export const scriptArgs = (head: 'EVALSHA' | 'EVAL', script: string, keys: readonly string[], args: Args): string[] => [head, script, String(keys.length), ...keys, ...strings(args)];

/** WAIT: how many replicas must acknowledge, within `timeoutMs`. */
export const waitArgs = (replicas: number, timeoutMs: number): string[] => ['WAIT', String(replicas), String(timeoutMs)];

/**
 * A family's failures as the port reports them: a server's error reply (the message `reply` reads from
 * the client's error, undefined when the server did not answer) becomes an Error named 'ReplyError'
 * with that message and the client's error as its `cause`; any other failure stays as it is.
 */
export function replyErrors(reply: (error: unknown) => string | undefined): (error: unknown) => unknown {
  return (error) => {
    const message = reply(error);
    if (message === undefined) return error;
    const named = new Error(message, { cause: error });
    named.name = 'ReplyError';
    return named;
  };
}

/** Listeners of one client's readiness, shared by every port over it (one listener on the client itself). */
export class Readiness {
  readonly #listeners = new Set<() => void>();

  /** Calls `listener` at each fire() until the returned unsubscribe is called. */
  add(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  fire(): void {
    for (const listener of [...this.#listeners]) listener();
  }
}

/**
 * A record per client, made by `create` at its first use and shared by every LockClient over the
 * client (so that it gets one set of listeners however many of them use it).
 */
export function perClient<C extends object, W>(create: (client: C) => W): (client: C) => W {
  const records = new WeakMap<C, W>();
  return (client) => {
    let record = records.get(client);
    if (record === undefined) records.set(client, (record = create(client)));
    return record;
  };
}

/** `connection` (a subscriber the port opened), its errors told to `record` (if any), then to `onError`. */
export function reporting<C extends { on(event: 'error', listener: (error: Error) => void): unknown }>(
  connection: C,
  onError: (error: Error) => void,
  record?: (error: Error) => void,
): C {
  connection.on('error', (error: Error) => {
    record?.(error);
    onError(error);
  });
  return connection;
}

/** Why a subscriber connection relock disconnected refuses a command. */
export const subscriberClosed = (): Error => new Error('the subscriber connection was closed');

/**
 * A Cluster's topology over a slot map its client keeps, or the adapter reads (`read`): refresh()
 * reads it again, then tells every watcher.
 */
export function slotMapTopology(map: Pick<Topology, 'owner' | 'masters'> & { read(): Promise<void> }): Topology {
  const watchers = new Set<() => void>();
  return {
    owner: (slot) => map.owner(slot),
    async refresh() {
      await map.read();
      for (const watcher of watchers) watcher();
    },
    watch(listener) {
      watchers.add(listener);
      return () => void watchers.delete(listener);
    },
    masters: () => map.masters(),
  };
}

/** The slot ranges of a CLUSTER SLOTS reply, each with its master's address as the servers announce it. */
export function slotRanges(reply: unknown): { readonly from: number; readonly to: number; readonly host: string; readonly port: number }[] {
  return (Array.isArray(reply) ? reply : []).flatMap((row: unknown) => {
    const [from, to, master] = row as [number, number, [string, number] | undefined];
    return master ? [{ from: Number(from), to: Number(to), host: String(master[0]), port: Number(master[1]) }] : [];
  });
}
