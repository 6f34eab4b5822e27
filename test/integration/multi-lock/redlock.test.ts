// client.multiLock() on a Redlock client (redis given as an array of masters): its lock() members are
// quorum locks, taken by quorum one by one in member order; all or none and exclusion as on one server.
import * as assert from 'uvu/assert';
import { LockClient } from '../../../src/index.ts';
import { describe, uniqueName, within } from '../../helpers/describe.ts';
import { startRedis, type RedisServer } from '../../helpers/redis.ts';

describe('LockClient#multiLock on a Redlock client', (it) => {
  let servers: RedisServer[] = [];
  const clients: LockClient[] = [];
  it.before(async () => {
    servers = await Promise.all([0, 1, 2].map(() => startRedis()));
  });
  it.after(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await Promise.all(servers.map((server) => server.stop()));
  });

  it('takes quorum-lock members all or none, and excludes another client', async () => {
    const [a, b] = [0, 1].map(() => new LockClient({ redis: servers.map((server) => server.url) }));
    clients.push(a!, b!);
    const name = uniqueName('multi');
    const mine = a!.multiLock([a!.lock(`${name}:1`), a!.lock(`${name}:2`)]);
    const theirs = b!.multiLock([b!.lock(`${name}:2`), b!.lock(`${name}:1`)]);
    const lease = await mine.acquire();
    assert.ok(await theirs.isLocked());
    assert.is(await lease.run(() => mine.holdCount()), 1);
    assert.is(await theirs.tryAcquire(), null);
    // One member held elsewhere: nothing is left taken.
    const waiting = theirs.acquire();
    await lease.release();
    const next = await within(waiting, 3_000, 'the other client after the release');
    assert.ok(next.fencingToken > lease.fencingToken);
    const single = await b!.lock(`${name}:1`).tryAcquire();
    assert.is(single, null, 'the member is held by the multi-lock');
    await next.release();
    assert.not.ok(await mine.isLocked());
    const held = await b!.lock(`${name}:2`).acquire();
    assert.is(await mine.tryAcquire(), null);
    assert.not.ok(await a!.lock(`${name}:1`).isLocked(), 'the member taken first was given back');
    await held.release();
  });
});
