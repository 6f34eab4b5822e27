// The part of redlock 4's API the bench uses (it ships no types).
declare module 'redlock' {
  import { EventEmitter } from 'node:events';

  interface Lock {
    unlock(): Promise<void>;
  }

  interface Options {
    driftFactor?: number;
    retryCount?: number;
    retryDelay?: number;
    retryJitter?: number;
  }

  export default class Redlock extends EventEmitter {
    constructor(clients: unknown[], options?: Options);
    lock(resource: string, ttl: number): Promise<Lock>;
  }
}
