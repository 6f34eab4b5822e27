// The SET NX floor over node-redis (issue 34 point 3): floor-poll's loop on a node-redis 6
// `createClient({ url })`, sent through `sendCommand` as relock sends its scripts over node-redis.
// Beside relock-node-redis in the same run: what is relock's cost and what is the client's.
import { createClient } from 'redis';
import { floorOver } from './floor-redis.ts';
import type { Create } from './types.ts';

export const create: Create = async (url) => {
  const client = createClient({ url });
  client.on('error', () => undefined);
  await client.connect();
  return floorOver((args) => client.sendCommand(args), () => client.close());
};
