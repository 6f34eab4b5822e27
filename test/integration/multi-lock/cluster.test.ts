// client.multiLock() on a Redis Cluster: members in different slots (on different masters), each
// member's scripts in its own slot; all or none, exclusion and loss as on one server.
import * as assert from 'uvu/assert';
import { LockLostError, LockTimeoutError, type LockClient } from '../../../src/index.ts';
import { clusterSuite, type RedisCluster } from '../../helpers/cluster.ts';
import { describe, rejects, uniqueName, within } from '../../helpers/describe.ts';

let cluster: RedisCluster;
let a: LockClient;
let b: LockClient;

/** Member names whose keys sit in slots served by different masters. */
async function spread(n: number): Promise<string[]> {
  const names: string[] = [];
  const masters = new Set<number>();
  while (names.length < n) {
    const name = uniqueName('multi');
    const master = (await cluster.masterOf(await cluster.slotOf(`relock:{${name}}`))).port;
    if (masters.has(master)) continue;
    masters.add(master);
    names.push(name);
  }
  return names;
}

describe('LockClient#multiLock on a Redis Cluster', (it) => {
  const client = clusterSuite(it, {}, (started) => (cluster = started), { leaseMs: 900 });
  it.before(() => {
    [a, b] = [client(), client()];
  });

  it('takes members on different masters all or none, and excludes another client', async () => {
    const names = await spread(3);
    const redis = cluster.connect();
    const exists = async () => (await Promise.all(names.map((name) => redis.exists(`relock:{${name}}`)))).reduce((x, y) => x + y, 0);
    const mine = a.multiLock(names.map((name) => a.lock(name)));
    const theirs = b.multiLock([...names].reverse().map((name) => b.lock(name)));
    const lease = await mine.acquire();
    assert.is(await exists(), 3, 'every member held, each on its own master');
    assert.instance(await rejects(theirs.acquire({ waitMs: 100 })), LockTimeoutError);
    // Renewed one member per call (no cross-slot script): still held after several leases.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    assert.not.ok(lease.signal.aborted, 'renewed across slots');
    const waiting = theirs.acquire();
    await lease.release();
    const next = await within(waiting, 3_000, 'the other client after the release');
    assert.ok(next.fencingToken > lease.fencingToken);
    await next.release();
    assert.is(await exists(), 0);

    // One member held elsewhere: nothing is left taken.
    const held = await b.lock(names[1]!).acquire();
    assert.is(await mine.tryAcquire(), null);
    assert.is(await exists(), 1, 'only the member held elsewhere');
    await held.release();
  });

  it('aborts the signal when a member on one master is force-unlocked, and frees the others', async () => {
    const names = await spread(2);
    const lease = await a.multiLock(names.map((name) => a.lock(name))).acquire();
    await b.lock(names[0]!).forceUnlock();
    const reason = await within(
      new Promise((resolve) => (lease.signal.aborted ? resolve(lease.signal.reason) : lease.signal.addEventListener('abort', () => resolve(lease.signal.reason)))),
      3_000,
      'the signal',
    );
    assert.instance(reason, LockLostError);
    await rejects(lease.release());
    assert.not.ok(await b.lock(names[1]!).isLocked(), 'the other member was released');
  });
});
