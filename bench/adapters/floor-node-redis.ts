// The SET NX floor over node-redis (issue 34 point 3): floor-poll's loop, SET NX PX and a Lua
// compare-and-delete by EVALSHA, on a node-redis 6 `createClient({ url })`, sent through
// `sendCommand` as relock sends its scripts over node-redis. Beside relock-node-redis in the same
// run: what is relock's cost and what is the client's.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient } from 'redis';
import { COMPARE_AND_DELETE, lockKey } from './floor-redis.ts';
import { LEASE_MS, RETRY_MS, type Create } from './types.ts';

export const create: Create = async (url) => {
  const client = createClient({ url });
  client.on('error', () => undefined);
  await client.connect();
  const sha = String(await client.sendCommand(['SCRIPT', 'LOAD', COMPARE_AND_DELETE]));
  return {
    async acquire(name) {
      const key = lockKey(name);
      const token = randomUUID();
      while (String(await client.sendCommand(['SET', key, token, 'PX', String(LEASE_MS), 'NX'])) !== 'OK') await sleep(RETRY_MS);
      return { release: async () => void (await client.sendCommand(['EVALSHA', sha, '1', key, token])) };
    },
    close: async () => void (await client.close()),
  };
};
