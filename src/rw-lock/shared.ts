// What every read-write lock of one client shares: the runtime, the commands, and the renewer of
// its holds (which finds each hold's keys and member through `targets`).
import type { Runtime } from '../runtime/runtime.ts';
import type { Renewable, Renewer } from '../runtime/watchdog.ts';
import { RwLockCommands, type RwSettings, type RwTarget } from './commands.ts';

export interface RwShared {
  readonly runtime: Runtime;
  readonly commands: RwLockCommands;
  readonly renewer: Renewer;
  /** Each hold's keys and member, for its renewals; dropped with the hold. */
  readonly targets: WeakMap<Renewable, RwTarget>;
}

export function createRwShared(runtime: Runtime, settings?: RwSettings): RwShared {
  const commands = new RwLockCommands(runtime.runner, runtime.publish, settings);
  const targets = new WeakMap<Renewable, RwTarget>();
  return {
    runtime,
    commands,
    // A Cluster cannot run one script over keys of several slots: renew one hold per call there.
    renewer: { renew: (batch, leaseMs) => commands.renew(batch.map((hold) => targets.get(hold)!), leaseMs), batch: 250 },
    targets,
  };
}
