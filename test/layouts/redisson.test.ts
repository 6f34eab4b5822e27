// The contract suites over the Redisson layout (layout: 'redisson'): each kind it offers keeps every
// promise of relock's own layout, on Redisson's keys (the interop suites in
// test/integration/redisson/, in npm test, check the other side, a Redisson client). Run by
// `npm run test:clients` (its layout-redisson cell) and `npm run test:servers`, not by npm test.
import { Redis } from 'ioredis';
import { LockClient } from '../../src/index.ts';
import { fixture } from '../helpers/fixture.ts';
import { lockContract } from '../contract/lock-contract.ts';
import { semaphoreContract } from '../contract/semaphore-contract.ts';

const clientOptions = { layout: 'redisson' } as const;

lockContract('client.lock() in the Redisson layout', (client, name) => client.lock(name), { clientOptions });
lockContract('client.fairLock() in the Redisson layout', (client, name) => client.fairLock(name), { clientOptions });
lockContract('client.readWriteLock().writeLock() in the Redisson layout', (client, name) => client.readWriteLock(name).writeLock(), { clientOptions });
lockContract('client.readWriteLock().readLock() in the Redisson layout', (client, name) => client.readWriteLock(name).readLock(), {
  clientOptions,
  blocker: (client, name) => client.readWriteLock(name).writeLock(),
});
semaphoreContract('client.semaphore() with one permit in the Redisson layout', async () => {
  const f = await fixture();
  return {
    client: () => f.client(clientOptions),
    admins: [f.admin],
    passedIn() {
      const redis = new Redis(f.server.url);
      redis.on('error', () => undefined);
      return { client: new LockClient({ redis, ...clientOptions }), connections: [redis] };
    },
    stop: () => f.close(),
  };
});
