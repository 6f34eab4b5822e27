// The semaphore's Lease contract (semaphore-contract.ts) on one private Redis server.
import { Redis } from 'ioredis';
import { LockClient } from '../../src/index.ts';
import { fixture } from '../helpers/fixture.ts';
import { semaphoreContract } from './semaphore-contract.ts';

semaphoreContract('client.semaphore() with one permit', async () => {
  const f = await fixture();
  return {
    client: () => f.client(),
    admins: [f.admin],
    passedIn() {
      const redis = new Redis(f.server.url);
      redis.on('error', () => undefined);
      return { client: new LockClient({ redis }), connections: [redis] };
    },
    stop: () => f.close(),
  };
});
