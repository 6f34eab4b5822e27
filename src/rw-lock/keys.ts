// The one place that spells the read-write lock's Redis key and channel names. The name sits in a
// hash tag (runtime/slot.ts, tagged()), so all of them live in one Cluster slot, apart from the
// other kinds' keys of the name.
import { tagged } from '../runtime/slot.ts';

export interface RwLockKeys {
  /** Hash: `writer` -> the write hold's owner; `r:<owner>` / `w:<owner>` -> hold count. */
  readonly hash: string;
  /** Zset: `r:<owner>` / `w:<owner>` -> lease end (Redis TIME, ms): each hold's own lease. */
  readonly leases: string;
  /** Zset: a waiting writer's wait id -> when its intent ends (Redis TIME, ms). */
  readonly intents: string;
  /** Zset: a waiting reader's wait id -> when its registration ends (Redis TIME, ms). */
  readonly waiting: string;
  /** Zset: the readers the last write release admitted ahead of writers; PX = the read batch. */
  readonly batch: string;
  /** String: the last fencing token. */
  readonly fence: string;
  /** Channel: a write release (or a dropped intent) wakes every waiting reader here. */
  readonly toReaders: string;
  /** Channel: releases that may let a writer in wake the head writer here. */
  readonly toWriters: string;
}

/** One side of the lock, as LockBase and the holds know it. */
export interface RwSideKeys {
  /**
   * The side's scope: the name under which an async context and the watchdog know its holds (not a
   * Redis key). The read and write holds of one context are two holds with two owners.
   */
  readonly lock: string;
  readonly side: 'r' | 'w';
  readonly rw: RwLockKeys;
}

export function rwLockKeys(prefix: string, name: string): RwLockKeys {
  const base = `${tagged(prefix, name)}:rw`;
  return {
    hash: base,
    leases: `${base}:leases`,
    intents: `${base}:intents`,
    waiting: `${base}:waiting`,
    batch: `${base}:batch`,
    fence: `${base}:fence`,
    toReaders: `${base}:to-readers`,
    toWriters: `${base}:to-writers`,
  };
}

export function sideKeys(rw: RwLockKeys, side: 'r' | 'w'): RwSideKeys {
  return { lock: `${rw.hash} ${side === 'r' ? 'read' : 'write'}`, side, rw };
}
