// The one place that spells the count-down latch's Redis key and channel names. The name sits in a
// hash tag (runtime/slot.ts, tagged()), so all of them live in one Cluster slot, apart from the keys
// of `lock(name)` and the others.
import { tagged } from '../runtime/slot.ts';

export interface LatchKeys {
  /** String: the count (absent: the latch is open). */
  readonly latch: string;
  /** Set: the ids of the count-downs applied since the count was set (a resent one counts once). */
  readonly done: string;
  /** Published once when the count reaches 0. */
  readonly channel: string;
}

export function latchKeys(prefix: string, name: string): LatchKeys {
  const base = `${tagged(prefix, name)}:latch`;
  return { latch: base, done: `${base}:done`, channel: `${base}:open` };
}
