// The SET NX floor over GLIDE (issue 34 point 3): floor-poll's loop, SET NX PX and a Lua
// compare-and-delete by EVALSHA, on a GLIDE 2.5 `GlideClient` (2 s request timeout, as relock-glide),
// sent through `customCommand` as relock sends its scripts over GLIDE. Beside relock-glide in the same
// run: what is relock's cost and what is the client's.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { GlideClient } from '@valkey/valkey-glide';
import { COMPARE_AND_DELETE, lockKey } from './floor-redis.ts';
import { LEASE_MS, RETRY_MS, type Create } from './types.ts';

export const create: Create = async (url) => {
  const { hostname, port } = new URL(url);
  const client = await GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port) }], requestTimeout: 2_000 });
  const sha = String(await client.customCommand(['SCRIPT', 'LOAD', COMPARE_AND_DELETE]));
  return {
    async acquire(name) {
      const key = lockKey(name);
      const token = randomUUID();
      while (String(await client.customCommand(['SET', key, token, 'PX', String(LEASE_MS), 'NX'])) !== 'OK') await sleep(RETRY_MS);
      return { release: async () => void (await client.customCommand(['EVALSHA', sha, '1', key, token])) };
    },
    close: async () => client.close(),
  };
};
