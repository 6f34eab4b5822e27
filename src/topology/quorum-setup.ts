// Builds a Redlock client's runtime: the first master's port is the runtime's own (its connection
// state), every master gets a ScriptRunner and an eviction check, and the subscriber is one fan-out
// connection over a subscriber connection per master.
import type { EventEmitter } from 'node:events';
import { LockError } from '../errors.ts';
import { isDown, type RedisPort, type SubscriberConnection } from '../port/port.ts';
import { Runtime } from '../runtime/runtime.ts';
import { ScriptRunner } from '../runtime/script.ts';
import { FanoutConnection } from './quorum-fanout.ts';
import { quorumOf, type Master } from './quorum-replies.ts';
import type { RedlockServer } from './quorum-servers.ts';

/**
 * What every kind of one Redlock client shares: the masters, the token floor. Each kind builds its
 * commands over the masters (the lock's, which the fair lock's quorum hold shares: src/kinds/quorum.ts).
 */
export interface RedlockShared {
  readonly runtime: Runtime;
  /** The masters, in the order of the servers: each one's script runner, label and state. */
  readonly masters: readonly Master[];
  /** The next token floor: this client's clock in microseconds, increasing. */
  floor(): string;
  /** Lock key -> when an attempt of this client last found it held: a first attempt soon after goes through the gate too. */
  readonly contended: Map<string, number>;
}

export interface RedlockSetupOptions {
  readonly servers: readonly RedlockServer[];
  readonly clientId: string;
  readonly leaseMs: number;
  readonly maxHoldMs?: number | undefined;
  readonly fenceTtlMs: number;
  readonly events: EventEmitter;
  /** The port of one master: over the client passed in, or over one the LockClient makes and owns. */
  readonly connect: (server: RedlockServer) => RedisPort;
}

export interface RedlockSetup {
  readonly runtime: Runtime;
  readonly shared: RedlockShared;
  /** The masters' ports, in the order of the servers. */
  readonly ports: readonly RedisPort[];
}

export function createRedlock(options: RedlockSetupOptions): RedlockSetup {
  const ports = options.servers.map((server) => options.connect(server));
  const quorum = quorumOf(ports.length);
  const runtime: Runtime = new Runtime({
    clientId: options.clientId,
    leaseMs: options.leaseMs,
    maxHoldMs: options.maxHoldMs,
    fenceTtlMs: options.fenceTtlMs,
    port: ports[0]!,
    servers: ports.map((port, i) => ({ port, label: options.servers[i]!.label })),
    joint: {
      unanswered: (failed, waitMs, cause, lockName) =>
        new LockError(`${failed} within ${waitMs} ms: no quorum: no majority of the masters answered its last attempt in time`, { cause, lockName, code: 'ERR_LOCK_NO_QUORUM' }),
    },
    events: options.events,
    openSubscriber: (): SubscriberConnection =>
      new FanoutConnection(
        ports.map((port) => port.openSubscriber()),
        quorum,
        // Each master as an error names it: a subscriber connection that is down fails for its server's reason.
        ports.map((port, i) => ({ label: options.servers[i]!.label, lastError: () => port.lastError, answering: () => port.status === 'ready' })),
      ) as unknown as SubscriberConnection,
  });
  const masters = ports.map(
    (port, i): Master => ({
      runner: new ScriptRunner(port, runtime.closed),
      label: options.servers[i]!.label,
      down: () => isDown(port.status),
      lastError: () => port.lastError,
    }),
  );
  let last = 0;
  const shared: RedlockShared = {
    runtime,
    masters,
    contended: new Map(),
    floor() {
      // Microseconds of this client's clock, never twice the same: a floor, not a token (see acquire-2.lua).
      last = Math.max(Math.floor((performance.timeOrigin + performance.now()) * 1000), last + 1);
      return String(last);
    },
  };
  return { runtime, shared, ports };
}
