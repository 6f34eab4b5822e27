// simple-redis-mutex: SET NX, and a release published on one global channel, on node-redis.
import { createClient } from 'redis';
import { lock } from 'simple-redis-mutex';
import { LEASE_MS, type Create } from './types.ts';

export const create: Create = async (url) => {
  const client = createClient({ url });
  client.on('error', () => undefined);
  await client.connect();
  return {
    async acquire(name) {
      const release = await lock(client as never, name, { timeout: LEASE_MS });
      return { release: () => release() };
    },
    close: async () => void (await client.close()),
  };
};
