// relock over a GLIDE client passed in (issue 19 point 4): the same adapter as relock, each LockClient
// given its own connected `GlideClient` (@valkey/valkey-glide 2.5, a 2 s request timeout, as
// docs/clients.md advises) instead of a URL. Beside relock over its own ioredis connection and over
// node-redis in the same run: the cost of the client family.
import { GlideClient } from '@valkey/valkey-glide';
import { bundle, relockAdapter } from './relock.ts';
import type { Create } from './types.ts';

export const create: Create = relockAdapter(bundle, undefined, async (url) => {
  const { hostname, port } = new URL(url);
  const redis = await GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port) }], requestTimeout: 2_000 });
  return { redis, close: async () => redis.close() };
});
