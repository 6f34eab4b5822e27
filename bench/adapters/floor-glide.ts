// The SET NX floor over GLIDE (issue 34 point 3): floor-poll's loop on a GLIDE 2.5 `GlideClient`
// (2 s request timeout, as relock-glide), sent through `customCommand` as relock sends its scripts
// over GLIDE. Beside relock-glide in the same run: what is relock's cost and what is the client's.
import { GlideClient } from '@valkey/valkey-glide';
import { floorOver } from './floor-redis.ts';
import type { Create } from './types.ts';

export const create: Create = async (url) => {
  const { hostname, port } = new URL(url);
  const client = await GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port) }], requestTimeout: 2_000 });
  return floorOver((args) => client.customCommand(args), async () => client.close());
};
