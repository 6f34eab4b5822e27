// A topology as the client sees it: the factories of every kind over one server or Cluster, or over
// a Redlock quorum. The client picks one backend when it is made and never branches on it again.
import type { CountDownLatch, Lock, ReadWriteLock, Semaphore } from '../api.ts';
import type { SemaphoreOptions } from '../options.ts';

/** Every kind of one topology. Names come checked; each call is cheap (no I/O). */
export interface Backend {
  lock(prefix: string, name: string): Lock;
  fairLock(prefix: string, name: string): Lock;
  semaphore(prefix: string, name: string, options: SemaphoreOptions): Semaphore;
  readWriteLock(prefix: string, name: string): ReadWriteLock;
  countDownLatch(prefix: string, name: string): CountDownLatch;
}

/** Makes a kind's shared state at its first use, once. */
export function once<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => (made ??= make());
}
