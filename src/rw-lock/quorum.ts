// The read-write lock on a Redlock client: client.readWriteLock() with the sides of the single-server
// lock (src/rw-lock/), whose commands run on every master with the majority deciding
// (./rw-commands.ts). Each master keeps the single-server layout; see docs/read-write-lock.md.
import type { RwShared } from './shared.ts';
import { createRwShared } from './shared.ts';
import { driftMs } from '../topology/quorum-replies.ts';
import type { RedlockShared } from '../topology/quorum-setup.ts';
import { RedlockRwCommands } from './quorum-commands.ts';

/**
 * What every read-write lock of a Redlock client shares: quorum commands over the client's masters
 * (its token floor with them), and a renewer that gives up a lease its clock-drift allowance early.
 */
export function createRedlockRwShared(redlock: RedlockShared): RwShared {
  const { runtime, masters } = redlock;
  return createRwShared(runtime, new RedlockRwCommands(masters, runtime.publish, () => redlock.floor()), driftMs);
}
