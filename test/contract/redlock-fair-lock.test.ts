// The Lock contract against client.fairLock() on a Redlock client of 3 masters (private redis-servers,
// started before the suite and stopped after it): the gate master's queue orders, the quorum excludes.
import * as assert from 'uvu/assert';
import { describe } from '../helpers/describe.ts';
import { startMasters } from '../integration/redlock/masters.ts';
import { lockContract } from './lock-contract.ts';

const masters = await startMasters(3);

// Connections passed in (shared by every client of the suite, as an application would): close() leaves
// them open, so what an acquire cut short by close() took is given back over them.
const connections = masters.servers.map((server) => server.connect());

// The scripts the contract counts while a waiter sleeps are the suite server's, which a Redlock client
// never uses: the idle cost on the gate (one heartbeat per client and lock every 200 ms) is the fair
// lock's, counted in test/contract/fair-lock.test.ts.
lockContract('client.fairLock() on a Redlock client of 3 masters', (client, name) => client.fairLock(name), { clientOptions: { redis: connections } });

describe('Redlock fair-lock contract masters', (it) => {
  it.after(async () => {
    for (const connection of connections) connection.disconnect();
    await masters.close();
  });
  it("never wrote client.lock(name)'s keys: only the quorum lock's (fair-quorum) and the gate's queue", async () => {
    for (const admin of masters.admins) {
      const keys = await admin.keys('relock:*');
      assert.ok(keys.length > 0, 'the suite left fences at least');
      const plain = keys.filter((key) => !key.startsWith('relock:fair-quorum:') && !/:fair(:|$)/.test(key));
      assert.equal(plain, [], 'keys of client.lock()');
    }
  });
});
