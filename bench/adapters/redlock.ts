// redlock 4, the node-redlock most projects still pin.
import { Redis } from 'ioredis';
import Redlock from 'redlock';
import { LEASE_MS, RETRY_MS, type Create } from './types.ts';

export const create: Create = async (url) => {
  const redis = new Redis(url);
  const redlock = new Redlock([redis], { retryCount: -1, retryDelay: RETRY_MS, retryJitter: RETRY_MS / 2 });
  redlock.on('clientError', () => undefined);
  return {
    async acquire(name) {
      const lock = await redlock.lock(name, LEASE_MS);
      return { release: async () => void (await lock.unlock()) };
    },
    close: async () => void (await redis.quit()),
  };
};
