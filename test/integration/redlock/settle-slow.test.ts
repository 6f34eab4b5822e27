// A rejected Redlock acquire leaves nothing behind, and a re-entry that lengthens the lease has it on
// every master, also when a master answers late (issue 30, point 8): the undo of a failed attempt is
// waited for on every master that may have taken it and is not known down, within the attempt's
// validity (not a fixed 50 ms: a loaded machine or a far master exceeds that); the re-entry, within
// the new lease's. One master here answers 60-120 ms late each way (behind a delaying proxy), which
// is what a loaded machine does to some replies at random.
import * as assert from 'uvu/assert';
import { LockClient, LockTimeoutError } from '../../../src/index.ts';
import { describe, eventually, rejects, uniqueName } from '../../helpers/describe.ts';
import { redisFor } from '../../helpers/fixture.ts';
import { startProxy, type Proxy } from '../../helpers/proxy.ts';
import { lockKey, setupMasters, type Masters } from './masters.ts';

const SLOW = { minMs: 60, maxMs: 120 };

/** A Redlock client over every master of `m`, the last one through `proxy`; closed by `closeAll`. */
function slowClient(m: Masters, proxy: Proxy, made: LockClient[], connections: Set<{ disconnect(): void }>, leaseMs?: number): LockClient {
  const urls = [...m.urls.slice(0, -1), `redis://${proxy.host}:${proxy.port}`];
  const client = new LockClient({ ...(leaseMs === undefined ? {} : { leaseMs }), redis: urls.map((url) => redisFor(url, connections, true)) });
  client.on('error', () => undefined);
  made.push(client);
  return client;
}

/** Another owner's hold on one master, for a minute. */
const foreign = async (m: Masters, i: number, key: string) => {
  await m.admins[i]!.hset(key, 'other:owner', '1');
  await m.admins[i]!.pexpire(key, 60_000);
};

describe('Redlock: a rejected acquire leaves nothing behind with a master answering late (5 masters)', (it) => {
  const m = setupMasters(it, 5);
  let proxy: Proxy;
  const clients: LockClient[] = [];
  const connections = new Set<{ disconnect(): void }>();
  it.before(async () => {
    proxy = await startProxy({ host: m.servers[4]!.host, port: m.servers[4]!.port });
  });
  it.after(async () => {
    await Promise.all(clients.map((client) => client.close()));
    for (const connection of connections) connection.disconnect();
    await proxy.close();
  });

  it('rejects lock.acquire({ waitMs: 300 }) held on 3 of 5 once neither free master holds anything of it', async () => {
    const client = slowClient(m, proxy, clients, connections);
    await (await client.lock(uniqueName('warm')).acquire()).release(); // connected, scripts loaded
    proxy.delay(SLOW);
    try {
      for (let round = 0; round < 5; round++) {
        const name = uniqueName('settle');
        for (const i of [0, 1, 2]) await foreign(m, i, lockKey(name));
        assert.instance(await rejects(client.lock(name).acquire({ waitMs: 300 })), LockTimeoutError);
        const left = await Promise.all([3, 4].map((i) => m.admins[i]!.hgetall(lockKey(name))));
        assert.equal(left, [{}, {}], `round ${round}: the free masters 3 and 4 hold nothing of the attempt`);
      }
    } finally {
      proxy.pass();
    }
  });

  it('rejects writeLock().acquire({ waitMs: 300 }) and semaphore.acquire({ waitMs: 300 }) held on 3 of 5 once neither free master holds anything of it', async () => {
    const client = slowClient(m, proxy, clients, connections);
    await (await client.readWriteLock(uniqueName('warm')).writeLock().acquire()).release();
    await (await client.semaphore(uniqueName('warm'), { permits: 1 }).acquire()).release();
    proxy.delay(SLOW);
    try {
      for (let round = 0; round < 3; round++) {
        // Write holds elsewhere come from another client of the same masters (the read-write layout is the library's).
        const name = uniqueName('settle');
        const other = m.client();
        const held = await other.readWriteLock(name).writeLock().acquire();
        // The other client holds it on every master; freed on 3 and 4, it is held on a majority only.
        await eventually(async () => (await Promise.all(m.admins.map((admin) => admin.exists(`relock:{${name}}:rw`)))).every((n) => n === 1), 'held on every master', 2_000);
        for (const i of [3, 4]) await m.admins[i]!.del(`relock:{${name}}:rw`, `relock:{${name}}:rw:leases`);
        assert.instance(await rejects(client.readWriteLock(name).writeLock().acquire({ waitMs: 300 })), LockTimeoutError);
        const rwLeft = await Promise.all([3, 4].map((i) => m.admins[i]!.exists(`relock:{${name}}:rw`, `relock:{${name}}:rw:leases`)));
        assert.equal(rwLeft, [0, 0], `round ${round}, read-write lock: the free masters hold nothing of the attempt`);
        await held.release().catch(() => undefined);

        const sem = uniqueName('settle');
        const semHeld = await other.semaphore(sem, { permits: 1 }).acquire();
        await eventually(async () => (await Promise.all(m.admins.map((admin) => admin.exists(`relock:{${sem}}:sem:leases`)))).every((n) => n === 1), 'held on every master', 2_000);
        for (const i of [3, 4]) await m.admins[i]!.del(`relock:{${sem}}:sem`, `relock:{${sem}}:sem:leases`);
        assert.instance(await rejects(client.semaphore(sem, { permits: 1 }).acquire({ waitMs: 300 })), LockTimeoutError);
        const semLeft = await Promise.all([3, 4].map((i) => m.admins[i]!.zcard(`relock:{${sem}}:sem:leases`)));
        assert.equal(semLeft, [0, 0], `round ${round}, semaphore: the free masters hold no lease of the attempt`);
        await semHeld.release().catch(() => undefined);
      }
    } finally {
      proxy.pass();
    }
  });
});

describe('Redlock: a re-entry that lengthens the lease has it on every master when it resolves (3 masters, one late)', (it) => {
  const m = setupMasters(it, 3);
  let proxy: Proxy;
  const clients: LockClient[] = [];
  const connections = new Set<{ disconnect(): void }>();
  it.before(async () => {
    proxy = await startProxy({ host: m.servers[2]!.host, port: m.servers[2]!.port });
  });
  it.after(async () => {
    await Promise.all(clients.map((client) => client.close()));
    for (const connection of connections) connection.disconnect();
    await proxy.close();
  });

  it('lock: a nested acquire({ leaseMs: 20000 }) under a 2 s lease resolves with every master at the new time to live', async () => {
    const client = slowClient(m, proxy, clients, connections);
    await (await client.lock(uniqueName('warm')).acquire()).release();
    proxy.delay(SLOW);
    try {
      for (let round = 0; round < 3; round++) {
        const name = uniqueName('reenter');
        const lock = client.lock(name);
        await lock.runExclusive(
          async () => {
            const nested = await lock.acquire({ leaseMs: 20_000 });
            const ttls = await Promise.all(m.admins.map((admin) => admin.pttl(lockKey(name))));
            assert.ok(ttls.every((ttl) => ttl > 10_000), `round ${round}: every master has the longer lease when the re-entry resolves (${ttls.join(', ')} ms)`);
            await nested.release();
          },
          { leaseMs: 2_000 },
        );
      }
    } finally {
      proxy.pass();
    }
  });
});
