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
  /** Its lock key: one lock given twice has it twice. */
  readonly key: string;
  /** Its lock's name: the first field of the order. */
  readonly name: string;
  readonly kind: LockKind;
}

/**
 * The second field of the order, among members of one name. The two sides of a read-write lock are
 * one resource: their ranks are next to each other, so nothing a multi-lock holds can sit between
 * them (write before read, as a downgrade takes them).
 */
const RANK: Readonly<Record<LockKind, number>> = { lock: 0, 'fair-lock': 1, 'write-lock': 2, 'read-lock': 3, semaphore: 4, 'multi-lock': 5, leader: 6 };

/**
 * The deadlock-free order: by name, then by kind, field by field. Never by key or by any string made
 * of the name: a name may contain anything, `}:rw s` included, and would then sort between the two
 * sides of another name's read-write lock.
 */
function compareMembers(a: Member, b: Member): number {
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  return RANK[a.kind] - RANK[b.kind];
}

/** The name a multi-lock reports: its members' names, in the order given, joined by commas. */
export function joinNames(locks: readonly Lock[]): string {
  return locks.map((lock) => lock.name).join(',');
}

/**
 * The members of `locks`, in the deadlock-free order (compareMembers).
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
    const { name } = identity;
    if (identity.runtime !== runtime) {
      throw new TypeError(`Expected \`locks[${index}]\` ("${name}") to come from the LockClient whose multiLock() was called, but it comes from another client`);
    }
    const twice = byKey.get(identity.key);
    if (twice) throw new RangeError(`Expected \`locks\` to hold each lock once, got "${name}" at ${twice.index} and ${index}`);
    byKey.set(identity.key, { lock: lock as Lock, index, key: identity.key, name, kind: identity.kind });
  });
  // Both sides of one read-write lock (one name, one client): the write side would wait for this very read side.
  for (const member of byKey.values()) {
    const other = member.kind === 'write-lock' && [...byKey.values()].find((m) => m.kind === 'read-lock' && m.name === member.name);
    if (other) {
      throw new RangeError(
        `Expected \`locks\` to hold one side of read-write lock "${member.name}", got its readLock() at ${other.index} and writeLock() at ${member.index}: the write lock alone excludes every reader`,
      );
    }
  }
  return [...byKey.values()].sort(compareMembers);
}
