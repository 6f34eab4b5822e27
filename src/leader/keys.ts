// The one place that spells an election's Redis keys and channel: beside the name's lock keys, in the
// same hash tag (runtime/slot.ts, tagged()), so all three live in one Cluster slot.
import { tagged } from '../runtime/slot.ts';

export interface LeaderKeys {
  /** The term: a hash of the leader's owner field and its `candidate`, `epoch`, `since`. */
  readonly lock: string;
  /** The last epoch issued: a fence key that never expires. */
  readonly fence: string;
  /** Every change of the election is published here. */
  readonly channel: string;
}

export function leaderKeys(prefix: string, name: string): LeaderKeys {
  const base = `${tagged(prefix, name)}:leader`;
  return { lock: base, fence: `${base}:epoch`, channel: `${base}:changed` };
}
