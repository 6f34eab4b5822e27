// The names of keys and channels: every key of one name in one Cluster slot (relock's and Redisson's
// forms), and the slot itself (port/slot.ts's, for the layers above port/).
export { keySlot } from '../port/slot.ts';

/**
 * The start of every key and channel of one name, `<prefix>:{<name>}`, which the suffixes of a
 * primitive's keys follow (they have no braces): Redis hashes the name up to its first `}`, the same
 * part of every key, so they all share one slot. A name that begins with `}` would give an empty tag
 * there, and Redis then hashes each whole key (a slot per key: CROSSSLOT): such a name starts
 * `<prefix>:}{<tag>}<name>}` instead, its tag the name with each `}` written `%7D`. No key of the first
 * form has `:}{` where the prefix ends, so the two forms never meet. (With braces in `prefix`, the
 * prefix's own tag may decide the slot: keep them out.)
 */
export function tagged(prefix: string, name: string): string {
  if (!name.startsWith('}')) return `${prefix}:{${name}}`;
  return `${prefix}:}{${name.replaceAll('}', '%7D')}}${name}}`;
}

/**
 * Redisson's name of a side key or channel of `name`: `<prefix>:{<name>}`, or `<prefix>:<name>` when
 * the name has a `{` already (then its own tag, if any, decides the slot, as in Redisson).
 */
export function redissonPrefixed(prefix: string, name: string): string {
  return name.includes('{') ? `${prefix}:${name}` : `${prefix}:{${name}}`;
}

/** Redisson's name of a key suffixed to `name`: `{<name>}:<suffix>`, or `<name>:<suffix>` when the name has a `{` already. */
export function redissonSuffixed(name: string, suffix: string): string {
  return name.includes('{') ? `${name}:${suffix}` : `{${name}}:${suffix}`;
}
