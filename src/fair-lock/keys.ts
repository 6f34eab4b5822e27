// The one place that spells the fair lock's Redis key and channel names. The name sits in a hash
// tag (runtime/slot.ts, tagged()), so all of them live in one Cluster slot, apart from the plain
// lock's keys of the same name.
import { tagged } from '../runtime/slot.ts';

export interface FairLockKeys {
  /** Hash: owner field -> hold count (a grant's claim, then its lease). */
  readonly lock: string;
  /** List: waiting owner fields, oldest first. */
  readonly queue: string;
  /** Zset: waiting owner field -> Redis TIME (ms) by which its client must heartbeat again. */
  readonly deadlines: string;
  /** String: the last fencing token. */
  readonly fence: string;
  /** A grant is published on this + the grantee's client id: one channel per client and lock. */
  readonly grantPrefix: string;
}

export function fairLockKeys(prefix: string, name: string): FairLockKeys {
  const base = `${tagged(prefix, name)}:fair`;
  return { lock: base, queue: `${base}:q`, deadlines: `${base}:d`, fence: `${base}:fence`, grantPrefix: `${base}:g:` };
}

/** The channel this client's grants on the lock arrive on. */
export function grantChannel(keys: FairLockKeys, clientId: string): string {
  return `${keys.grantPrefix}${clientId}`;
}
