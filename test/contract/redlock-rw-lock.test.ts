// The Lock contract against both sides of client.readWriteLock() on a Redlock client of 3 masters
// (private redis-servers, started before the suites and stopped after them), as rw-lock.test.ts runs
// it on one server: the write side as a Lock, the read side with the write side as its blocker.
import * as assert from 'uvu/assert';
import { describe, eventually } from '../helpers/describe.ts';
import { startMasters } from '../integration/redlock/masters.ts';
import { lockContract } from './lock-contract.ts';

const masters = await startMasters(3);

// Connections passed in, shared by every client of the suites (as in redlock.test.ts).
const connections = masters.servers.map((server) => server.connect());
const clientOptions = { redis: connections };

lockContract('client.readWriteLock().writeLock() on a Redlock client of 3 masters', (client, name) => client.readWriteLock(name).writeLock(), { clientOptions });

lockContract('client.readWriteLock().readLock() on a Redlock client of 3 masters', (client, name) => client.readWriteLock(name).readLock(), {
  clientOptions,
  blocker: (client, name) => client.readWriteLock(name).writeLock(),
});

describe('Redlock read-write contract masters', (it) => {
  it.after(() => masters.close());

  it('left no partial hold behind: every hold still there (a closed client\'s, until its lease ends) is on every master', async () => {
    const holds = async (admin: (typeof masters.admins)[number]) => {
      const members: string[] = [];
      for (const key of await admin.keys('relock:*:rw:leases')) for (const member of await admin.zrange(key, '0', '-1')) members.push(`${key} ${member}`);
      return members.sort();
    };
    // A release settles at a majority: the last master's copy may land a moment later.
    await eventually(async () => new Set((await Promise.all(masters.admins.map(holds))).map((held) => held.join())).size === 1, 'the same holds on every master', 2_000);
    const held = await holds(masters.admins[0]!);
    assert.ok(held.length < 10, `${held.length} holds left`);
  });
});
