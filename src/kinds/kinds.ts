// The kinds of one column (relock's layout, Redisson's layout, a Redlock quorum): the only place that
// wires each kind to its keys and commands. The client picks one column when it is made and never
// branches on the topology or the layout again; a new kind is its folder plus one line per column.
import type { CountDownLatch, Election, Job, Lock, ReadWriteLock, Semaphore } from '../api.ts';
import type { JobSettings } from '../job/job.ts';
import type { LeaderSettings } from '../leader/leader.ts';
import type { SemaphoreOptions } from '../options.ts';

/** Every kind of one column. Names come checked; each call is cheap (no I/O). */
export interface Kinds {
  lock(prefix: string, name: string): Lock;
  fairLock(prefix: string, name: string): Lock;
  semaphore(prefix: string, name: string, options: SemaphoreOptions): Semaphore;
  readWriteLock(prefix: string, name: string): ReadWriteLock;
  countDownLatch(prefix: string, name: string): CountDownLatch;
  job(prefix: string, name: string, options: JobSettings): Job;
  leader(prefix: string, name: string, options: LeaderSettings): Election;
}

/** Makes a kind's shared state at its first use, once. */
export function once<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => (made ??= make());
}
