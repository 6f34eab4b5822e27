// A slow master is no lost lease (issue 30, point 1): three masters A, B, C, a lease held on all
// three, B restarted empty (it forgets the hold), C answering 40-120 ms late (a far or busy master,
// behind a delaying proxy). At each renewal A says "renewed" at once, B "not held" at once, and C
// "renewed" late: a majority (A and C) agrees that the lease is renewed, so it is, and
// lease.signal stays quiet. A decision waits for a majority of agreeing answers; no fixed
// straggler cut decides "not renewed" before C's answer arrives.
import * as assert from 'uvu/assert';
import { LockClient, type Lease, type LockClientOptions } from '../../../src/index.ts';
import { describe, eventually, uniqueName } from '../../helpers/describe.ts';
import { redisFor, sleep } from '../../helpers/fixture.ts';
import { startProxy, type Proxy } from '../../helpers/proxy.ts';
import { lockKey, setupMasters } from './masters.ts';

const LEASE_MS = 2_000;
/** Renewals run every lease / 3: by then, three renewals after B's restart have been decided. */
const WATCH_MS = 2_500;

describe('Redlock: a slow master does not turn a held lease into a loss (3 masters, C 40-120 ms late)', (it) => {
  const m = setupMasters(it, 3);
  let proxy: Proxy;
  const connections = new Set<{ disconnect(): void }>();
  const clients: LockClient[] = [];
  it.before(async () => {
    proxy = await startProxy({ host: m.servers[2]!.host, port: m.servers[2]!.port });
  });
  it.after(async () => {
    await Promise.all(clients.map((client) => client.close()));
    for (const connection of connections) connection.disconnect();
    await proxy.close();
  });

  /** A Redlock client over A, B and C, C through the proxy. */
  const client = (options: Omit<LockClientOptions, 'redis'> = {}) => {
    const urls = [m.urls[0]!, m.urls[1]!, `redis://${proxy.host}:${proxy.port}`];
    const made = new LockClient({ ...options, redis: urls.map((url) => redisFor(url, connections, true)) });
    made.on('error', () => undefined);
    clients.push(made);
    return made;
  };

  /**
   * Holds `lease` (taken on all three), restarts B empty, makes C slow, and watches lease.signal for
   * WATCH_MS: it must not abort, and A and C must hold `key` with a renewed time to live.
   */
  const survives = async (lease: Lease, keys: readonly string[], what: string) => {
    // The acquire resolved on a majority; the third master's hold may land a moment later.
    for (const admin of m.admins) for (const key of keys) await eventually(async () => (await admin.pttl(key)) > 0, `${what}: ${key} held on every master before`, 2_000);
    proxy.delay(0, { minMs: 40, maxMs: 120 });
    try {
      await m.servers[1]!.restart();
      const restartedAt = performance.now();
      let lostAt: number | undefined;
      lease.signal.addEventListener('abort', () => (lostAt = performance.now()), { once: true });
      await sleep(WATCH_MS);
      assert.is(lostAt, undefined, `${what}: lease.signal aborted ${lostAt === undefined ? '' : Math.round(lostAt - restartedAt)} ms after B's restart (${String(lease.signal.reason)})`);
      for (const i of [0, 2]) for (const key of keys) assert.ok((await m.admins[i]!.pttl(key)) > 0, `${what}: ${key} still held on master ${i}`);
      for (const key of keys) assert.is(await m.admins[1]!.exists(key), 0, `${what}: B, restarted empty, does not hold ${key}`);
      await lease.release();
    } finally {
      proxy.pass();
    }
  };

  it('keeps a lock() lease renewed on A and C while B forgets it and C answers late', async () => {
    const c = client({ leaseMs: LEASE_MS });
    const name = uniqueName('slow');
    const lease = await c.lock(name).acquire();
    await survives(lease, [lockKey(name)], 'lock()');
  });

  it('keeps a semaphore() lease renewed on A and C while B forgets it and C answers late', async () => {
    const c = client({ leaseMs: LEASE_MS });
    const name = uniqueName('slow');
    const lease = await c.semaphore(name, { permits: 2 }).acquire();
    await survives(lease, [`relock:{${name}}:sem`], 'semaphore()');
  });

  it('keeps a readWriteLock() write lease renewed on A and C while B forgets it and C answers late', async () => {
    const c = client({ leaseMs: LEASE_MS });
    const name = uniqueName('slow');
    const lease = await c.readWriteLock(name).writeLock().acquire();
    await survives(lease, [`relock:{${name}}:rw`], 'readWriteLock().writeLock()');
  });
});
