// The read-write lock: two Locks over one set of keys, the read side shared, the write side
// exclusive (see docs/read-write-lock.md for the layout and the policy).
import type { Lock, ReadWriteLock } from '../api.ts';
import { sideKeys } from './keys.ts';
import type { RwShared } from './shared.ts';
import { RwSideImpl } from './side.ts';

export class ReadWriteLockImpl implements ReadWriteLock {
  readonly name: string;
  readonly #read: RwSideImpl;
  readonly #write: RwSideImpl;

  constructor(shared: RwShared, prefix: string, name: string) {
    this.name = name;
    const keys = shared.keys(prefix, name);
    const read = sideKeys(keys, 'r');
    const write = sideKeys(keys, 'w');
    this.#read = new RwSideImpl(shared, name, read, write);
    this.#write = new RwSideImpl(shared, name, write, read);
  }

  readLock(): Lock {
    return this.#read;
  }

  writeLock(): Lock {
    return this.#write;
  }
}
