// redis-semaphore's Mutex.
import { Redis } from 'ioredis';
import { Mutex } from 'redis-semaphore';
import { LEASE_MS, RETRY_MS, type Create } from './types.ts';

export const create: Create = async (url) => {
  const redis = new Redis(url);
  return {
    async acquire(name) {
      // The identifier belongs to the Mutex object: one object per acquire.
      const mutex = new Mutex(redis, name, { lockTimeout: LEASE_MS, acquireTimeout: Number.POSITIVE_INFINITY, retryInterval: RETRY_MS });
      await mutex.acquire();
      return { release: () => mutex.release() };
    },
    close: async () => void (await redis.quit()),
  };
};
