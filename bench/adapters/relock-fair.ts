// relock's fair lock (`client.fairLock(name)`: FIFO across processes, direct hand-off), through the
// same adapter as relock. A bundle without `fairLock` refuses at setup with "not available", which
// run.ts records once and the report shows as such.
import type { Lock } from '../../dist/index.mjs';
import { bundle, relockAdapter } from './relock.ts';
import type { Create } from './types.ts';

export const NOT_AVAILABLE = 'not available: this build of relock has no LockClient#fairLock';

export const create: Create = relockAdapter(bundle, (client) => {
  const fairLock = (client as unknown as { fairLock?: (name: string) => Lock }).fairLock;
  if (typeof fairLock !== 'function') throw new Error(NOT_AVAILABLE);
  return (name) => fairLock.call(client, name);
});
