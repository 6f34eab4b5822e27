// The one place that spells the semaphore's Redis key and channel names. The name sits in a hash
// tag (runtime/slot.ts, tagged()), so all of them live in one Cluster slot, apart from the keys of
// `lock(name)` and the others.
import { tagged } from '../runtime/slot.ts';

export interface SemaphoreKeys {
  /** The semaphore's name (not a key: for messages). */
  readonly name: string;
  /** Hash: "limit" -> the limit, "held" -> permits held, "<owner>" -> the permits of that lease. */
  readonly sem: string;
  /** Zset: owner field -> lease end (Redis TIME, ms). */
  readonly leases: string;
  /** String: the last fencing token. */
  readonly fence: string;
  /** Releases publish here how many permits came free. */
  readonly channel: string;
}

export function semaphoreKeys(prefix: string, name: string): SemaphoreKeys {
  const base = `${tagged(prefix, name)}:sem`;
  return { name, sem: base, leases: leasesOf(base), fence: `${base}:fence`, channel: `${base}:released` };
}

/** The leases zset of a semaphore hash (a hold knows only its hash key; renewal needs both). */
export function leasesOf(sem: string): string {
  return `${sem}:leases`;
}
