// The polling floor: SET NX PX, retried every 10 ms.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, lockKey } from './floor-redis.ts';
import { LEASE_MS, RETRY_MS, type Create } from './types.ts';

export const create: Create = async (url) => {
  const redis = connect(url);
  return {
    async acquire(name) {
      const key = lockKey(name);
      const token = randomUUID();
      while ((await redis.set(key, token, 'PX', LEASE_MS, 'NX')) !== 'OK') await sleep(RETRY_MS);
      return { release: async () => void (await redis.compareAndDelete(key, token)) };
    },
    close: async () => void (await redis.quit()),
  };
};
