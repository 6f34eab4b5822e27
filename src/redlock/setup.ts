// Builds a Redlock client's runtime: the first master's connection is the runtime's own (its eviction
// check, its connection state), every master gets a ScriptRunner, and the subscriber is one fan-out
// connection over a subscriber connection per master.
import type { EventEmitter } from 'node:events';
import type { RedisClient } from '../options.ts';
import { Runtime } from '../runtime/runtime.ts';
import { ScriptRunner } from '../runtime/script.ts';
import { RedlockCommands } from './commands.ts';
import { FanoutConnection } from './fanout.ts';
import { driftMs, type RedlockShared } from './lock.ts';
import { quorumOf, type Master } from './replies.ts';
import type { RedlockServer } from './servers.ts';

export interface RedlockSetupOptions {
  readonly servers: readonly RedlockServer[];
  readonly clientId: string;
  readonly leaseMs: number;
  readonly fenceTtlMs: number;
  readonly events: EventEmitter;
  /** The command connection of one master: the client passed in, or one the LockClient makes and owns. */
  readonly connect: (server: RedlockServer) => RedisClient;
  /** A subscriber connection duplicated from a master's command connection (owned by the LockClient). */
  readonly subscriber: (connection: RedisClient) => RedisClient;
}

export interface RedlockSetup {
  readonly runtime: Runtime;
  readonly shared: RedlockShared;
  /** The command connections, in the order of the servers. */
  readonly connections: readonly RedisClient[];
}

export function createRedlock(options: RedlockSetupOptions): RedlockSetup {
  const connections = options.servers.map((server) => options.connect(server));
  const quorum = quorumOf(connections.length);
  const runtime: Runtime = new Runtime({
    clientId: options.clientId,
    leaseMs: options.leaseMs,
    fenceTtlMs: options.fenceTtlMs,
    redis: connections[0]!,
    servers: connections.map((redis, i) => ({ redis, label: options.servers[i]!.label })),
    events: options.events,
    connectSubscriber: (): RedisClient => new FanoutConnection(connections.map(options.subscriber), quorum, options.servers.map((server) => server.label)) as unknown as RedisClient,
  });
  const masters = connections.map(
    (connection, i): Master => ({
      runner: new ScriptRunner(connection, runtime.closed),
      label: options.servers[i]!.label,
      down: () => connection.status === 'reconnecting' || connection.status === 'close' || connection.status === 'end',
    }),
  );
  const commands: RedlockCommands = new RedlockCommands(masters, runtime.publish);
  let last = 0;
  const shared: RedlockShared = {
    runtime,
    commands,
    renewer: { renew: (batch, leaseMs) => commands.renew(batch, leaseMs), batch: 500, allowanceMs: driftMs },
    contended: new Map(),
    floor() {
      // Microseconds of this client's clock, never twice the same: a floor, not a token (see acquire-2.lua).
      last = Math.max(Math.floor((performance.timeOrigin + performance.now()) * 1000), last + 1);
      return String(last);
    },
  };
  return { runtime, shared, connections };
}
