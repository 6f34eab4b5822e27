// A multi-lock's members: checked before any I/O (all of one client, each once), and put in the one
// order every process takes them in, so that two multi-locks over shared members never deadlock.
import type { Lock } from '../api.ts';
import type { LockKind } from '../diagnostics.ts';
import { lockIdentity } from '../lock-base.ts';
import type { Runtime } from '../runtime/runtime.ts';

/** A member in acquisition order, with its place in the list the caller gave. */
export interface Member {
  readonly lock: Lock;
  /** Its index in the caller's list (leases are handed back in that order). */
  readonly index: number;
  /** The key its order is decided by: its lock key, the same in every process. */
  readonly key: string;
  readonly kind: LockKind;
}

/** The name a multi-lock reports: its members' names, in the order given, joined by commas. */
export function joinNames(locks: readonly Lock[]): string {
  return locks.map((lock) => lock.name).join(',');
}

/**
 * The members of `locks`, sorted by key (the deadlock-free order).
 * @throws {TypeError} when `locks` is not an array, or holds anything but a lock of this client.
 * @throws {RangeError} when it is empty, holds one lock twice, or both sides of one read-write lock.
 */
export function checkMembers(locks: unknown, runtime: Runtime): Member[] {
  if (!Array.isArray(locks)) throw new TypeError(`Expected \`locks\` to be an array of locks, got ${typeof locks === 'object' ? String(locks) : typeof locks}`);
  if (locks.length === 0) throw new RangeError('Expected `locks` to hold at least one lock, got an empty array');
  const byKey = new Map<string, Member>();
  locks.forEach((lock: unknown, index) => {
    const identity = lockIdentity(lock);
    if (!identity) {
      throw new TypeError(`Expected \`locks[${index}]\` to be a lock from client.lock(), client.fairLock() or client.readWriteLock(), got ${lock === null ? 'null' : typeof lock}`);
    }
    const name = (lock as Lock).name;
    if (identity.runtime !== runtime) {
      throw new TypeError(`Expected \`locks[${index}]\` ("${name}") to come from the LockClient whose multiLock() was called, but it comes from another client`);
    }
    const twice = byKey.get(identity.key);
    if (twice) throw new RangeError(`Expected \`locks\` to hold each lock once, got "${name}" at ${twice.index} and ${index}`);
    byKey.set(identity.key, { lock: lock as Lock, index, key: identity.key, kind: identity.kind });
  });
  // Both sides of one read-write lock (one name, one client): the write side would wait for this very read side.
  for (const member of byKey.values()) {
    const other = member.kind === 'write-lock' && [...byKey.values()].find((m) => m.kind === 'read-lock' && m.lock.name === member.lock.name);
    if (other) {
      throw new RangeError(
        `Expected \`locks\` to hold one side of read-write lock "${member.lock.name}", got its readLock() at ${other.index} and writeLock() at ${member.index}: the write lock alone excludes every reader`,
      );
    }
  }
  return [...byKey.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
