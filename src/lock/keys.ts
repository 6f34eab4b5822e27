// The one place that spells the lock's Redis key and channel names. The name sits in a hash tag
// (runtime/slot.ts, tagged()), so all three live in one Cluster slot.
import { tagged } from '../runtime/slot.ts';

export interface LockKeys {
  readonly lock: string;
  readonly fence: string;
  readonly channel: string;
}

export function lockKeys(prefix: string, name: string): LockKeys {
  const base = tagged(prefix, name);
  return { lock: base, fence: `${base}:fence`, channel: `${base}:released` };
}
