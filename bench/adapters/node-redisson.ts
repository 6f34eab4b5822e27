// node-redisson: Redisson's hash, watchdog and pub/sub, in Node.
import { Redisson } from 'node-redisson';
import type { Create } from './types.ts';

export const create: Create = async (url) => {
  const { hostname, port } = new URL(url);
  const redisson = new Redisson({ redis: { options: { host: hostname, port: Number(port) } } });
  return {
    async acquire(name) {
      // The owner id belongs to the lock object: one object per acquire, or two acquires would re-enter.
      const lock = redisson.getLock(name);
      await lock.lock();
      return { release: () => lock.unlock() };
    },
    close: () => redisson.quit(),
  };
};
