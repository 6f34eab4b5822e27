// What every fair lock of one client shares: the runtime, the commands, the renewer of its holds,
// the bounds on Redis TIME, every waiter by owner, and one heartbeat per lock with waiters.
import type { Runtime } from '../runtime/runtime.ts';
import type { ScriptRunner } from '../runtime/script.ts';
import type { Renewer } from '../runtime/renewable.ts';
import { FairLockCommands } from './commands.ts';
import { FairWaiters } from './grants.ts';
import { Heartbeat } from './heartbeat.ts';
import { Joins } from './joins.ts';
import type { FairLockKeys } from './keys.ts';
import { RedisClock } from './redis-clock.ts';
import { FAIR_SETTINGS, type FairSettings } from './settings.ts';

export interface FairShared {
  readonly runtime: Runtime;
  /** The connection its scripts run on (on a Redlock client: the gate master's, not the runtime's). */
  readonly runner: ScriptRunner;
  readonly commands: FairLockCommands;
  readonly renewer: Renewer;
  readonly settings: FairSettings;
  readonly redisClock: RedisClock;
  readonly waiters: FairWaiters;
  /** Lock key -> the heartbeat of this client's waiters on it. */
  readonly heartbeats: Map<string, Heartbeat>;
  /** This client's joins of a queue, one script call per lock and turn. */
  readonly joins: Joins;
  /** Lock key -> how many fair acquires of this client are under way on it. */
  readonly underWay: Map<string, number>;
  /** Lock key -> settles when the last of this client's acquires on it has taken its place in the queue. */
  readonly placing: Map<string, Promise<void>>;
}

/**
 * What every fair lock of one client shares, over `runner`: the client's own connection, or (on a
 * Redlock client) the connection of the one master whose queue orders the waiters.
 */
export function createFairShared(runtime: Runtime, settings: FairSettings = FAIR_SETTINGS, runner: ScriptRunner = runtime.runner): FairShared {
  const redisClock = new RedisClock();
  const commands = new FairLockCommands(runner, runtime.publish, runtime.fenceTtlMs, settings, redisClock, runtime.watchdog.clock);
  return {
    runtime,
    runner,
    commands,
    // On a Cluster the watchdog cuts batches by slot (a script cannot span slots).
    renewer: { renew: (batch, leaseMs) => commands.renew(batch, leaseMs), batch: 500 },
    settings,
    redisClock,
    waiters: new FairWaiters(),
    heartbeats: new Map(),
    underWay: new Map(),
    placing: new Map(),
    joins: new Joins(commands),
  };
}

/** The heartbeat of this client's waiters on a lock, made with the first of them. */
export function heartbeatFor(shared: FairShared, keys: FairLockKeys): Heartbeat {
  const existing = shared.heartbeats.get(keys.lock);
  if (existing) return existing;
  const created: Heartbeat = new Heartbeat({
    keys,
    commands: shared.commands,
    waiters: shared.waiters,
    settings: shared.settings,
    clock: shared.runtime.watchdog.clock,
    onError: (error) => shared.runtime.error(error),
    onEmpty: () => {
      if (shared.heartbeats.get(keys.lock) === created) shared.heartbeats.delete(keys.lock);
    },
  });
  shared.heartbeats.set(keys.lock, created);
  return created;
}
