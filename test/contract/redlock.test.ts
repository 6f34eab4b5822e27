// The Lock contract against client.lock() on a Redlock client of 3 masters (private redis-servers,
// started before the suite and stopped after it).
import * as assert from 'uvu/assert';
import { describe } from '../helpers/describe.ts';
import { startMasters } from '../integration/redlock/masters.ts';
import { lockContract } from './lock-contract.ts';

const masters = await startMasters(3);

// Connections passed in (shared by every client of the suite, as an application would): close() leaves
// them open, so what an acquire cut short by close() took is given back over them.
const connections = masters.servers.map((server) => server.connect());

lockContract('client.lock() on a Redlock client of 3 masters', (client, name) => client.lock(name), { clientOptions: { redis: connections } });

describe('Redlock contract masters', (it) => {
  it.after(() => masters.close());

  it('left no partial hold behind: every lock still held (a closed client\'s, until its lease ends) is on every master, with one owner', async () => {
    const [first, ...others] = masters.admins;
    const keys = new Set<string>();
    for (const admin of masters.admins) for (const key of await admin.keys('relock:*')) if (!key.endsWith(':fence')) keys.add(key);
    assert.ok(keys.size < 10, `${keys.size} lock keys left`);
    for (const key of keys) {
      const fields = await first!.hgetall(key);
      assert.is(Object.keys(fields).length, 1, `${key} on master 0: ${JSON.stringify(fields)}`);
      for (const admin of others) assert.equal(await admin.hgetall(key), fields, `${key} is the same on every master`);
    }
  });
});
