// What every read-write lock of one client shares: the runtime, the commands, and the renewer of
// its holds (which finds each hold's keys and member through `targets`).
import type { Runtime } from '../runtime/runtime.ts';
import type { Renewable, Renewer } from '../runtime/renewable.ts';
import { RwLockCommands, type RwCommands, type RwTarget } from './commands.ts';
import { rwLockKeys, type RwLockKeys } from './keys.ts';

export interface RwShared {
  readonly runtime: Runtime;
  readonly commands: RwCommands;
  readonly renewer: Renewer;
  /** Each hold's keys and member, for its renewals; dropped with the hold. */
  readonly targets: WeakMap<Renewable, RwTarget>;
  /** The keys of a name, in the client's layout. */
  readonly keys: (prefix: string, name: string) => RwLockKeys;
}

/**
 * @param commands the client's own server's by default; a Redlock client's run on every master, or
 * the Redisson layout's
 * @param allowanceMs the renewer's allowance (Redlock's clock drift), if any
 * @param keys the key layout: relock's by default
 */
export function createRwShared(
  runtime: Runtime,
  commands: RwCommands = new RwLockCommands(runtime.runner, runtime.publish),
  allowanceMs?: (leaseMs: number) => number,
  keys: (prefix: string, name: string) => RwLockKeys = rwLockKeys,
): RwShared {
  const targets = new WeakMap<Renewable, RwTarget>();
  // A Cluster cannot run one script over keys of several slots: renew one hold per call there.
  const renewer: Renewer = { renew: (batch, leaseMs) => commands.renew(batch.map((hold) => targets.get(hold)!), leaseMs), batch: 250 };
  return { runtime, commands, renewer: allowanceMs ? { ...renewer, allowanceMs } : renewer, targets, keys };
}
