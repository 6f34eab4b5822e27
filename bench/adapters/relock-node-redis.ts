// relock over a node-redis client passed in (issue 19): the same adapter as relock, each LockClient
// given its own connected node-redis 6 `createClient()` instead of a URL. Beside relock over its own
// ioredis connection in the same run, the cost of the client family.
import { createClient } from 'redis';
import { bundle, relockAdapter } from './relock.ts';
import type { Create } from './types.ts';

export const create: Create = relockAdapter(bundle, undefined, async (url) => {
  const redis = await createClient({ url }).connect();
  return { redis, close: () => redis.close() };
});
