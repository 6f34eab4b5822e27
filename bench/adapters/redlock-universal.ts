// redlock-universal's SimpleLock on its ioredis adapter.
import { Redis } from 'ioredis';
import { createLock, IoredisAdapter } from 'redlock-universal';
import { LEASE_MS, RETRY_MS, type Create } from './types.ts';

export const create: Create = async (url) => {
  const redis = new Redis(url);
  const adapter = new IoredisAdapter(redis);
  const locks = new Map<string, ReturnType<typeof createLock>>();
  return {
    async acquire(name) {
      let lock = locks.get(name);
      if (!lock) {
        // It has no "wait forever": the largest attempt count it accepts.
        lock = createLock({ adapter, key: name, ttl: LEASE_MS, retryAttempts: Number.MAX_SAFE_INTEGER, retryDelay: RETRY_MS });
        locks.set(name, lock);
      }
      const owned = lock;
      const handle = await owned.acquire();
      return { release: async () => void (await owned.release(handle)) };
    },
    close: async () => void (await redis.quit()),
  };
};
