// The semaphore's Lease contract (semaphore-contract.ts) on a Redlock client of 3 masters (private
// redis-servers): the quorum semaphore of src/semaphore/quorum.ts, with one permit.
import { LockClient } from '../../src/index.ts';
import { startMasters } from '../integration/redlock/masters.ts';
import { semaphoreContract } from './semaphore-contract.ts';

semaphoreContract('client.semaphore() with one permit on a Redlock client of 3 masters', async () => {
  const m = await startMasters(3);
  return {
    client: () => m.client(),
    admins: m.admins,
    passedIn() {
      const connections = m.servers.map((server) => server.connect());
      for (const redis of connections) redis.on('error', () => undefined);
      return { client: new LockClient({ redis: connections }), connections };
    },
    stop: () => m.close(),
  };
});
