// @sesamecare-oss/redlock: node-redlock rewritten in TypeScript for ioredis 5+.
import { Redis } from 'ioredis';
import { Redlock } from '@sesamecare-oss/redlock';
import { LEASE_MS, RETRY_MS, type Create } from './types.ts';

export const create: Create = async (url) => {
  const redis = new Redis(url);
  const redlock = new Redlock([redis], { retryCount: -1, retryDelay: RETRY_MS, retryJitter: RETRY_MS / 2 });
  // It emits 'error' for every attempt that finds the lock taken: without a listener that throws.
  redlock.on('error', () => undefined);
  return {
    async acquire(name) {
      const lock = await redlock.acquire([name], LEASE_MS);
      return { release: async () => void (await lock.release()) };
    },
    close: async () => void (await redis.quit()),
  };
};
