// The one place that spells the lock's Redis key and channel names. The name sits in a hash tag, so
// all three live in one Cluster slot.

export interface LockKeys {
  readonly lock: string;
  readonly fence: string;
  readonly channel: string;
}

export function lockKeys(prefix: string, name: string): LockKeys {
  const base = `${prefix}:{${name}}`;
  return { lock: base, fence: `${base}:fence`, channel: `${base}:released` };
}
