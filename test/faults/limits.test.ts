// The limits docs/guarantees.md names, each shown by a scenario: a failover to a replica that missed
// the acquire lets two holders in (their fencing tokens tell the storage which one is stale), and
// steps of the Redis clock. libfaketime cannot be preloaded into this redis-server build (it recurses
// in clock_gettime), so the clock steps are shown by their effect on Redis's state: a forward step
// takes that much time off every lease (Redis expires keys by its wall clock), a backward step makes
// TIME lower than tokens already issued.
import * as assert from 'uvu/assert';
import { LockClient } from '../../src/index.ts';
import { describe, eventually, uniqueName } from '../helpers/describe.ts';
import { startPrivateRedis, type RedisServer } from '../helpers/redis.ts';
import { FENCED_SET } from './protocol.ts';

const servers: RedisServer[] = [];
const clients: LockClient[] = [];
const client = (url: string, leaseMs = 1_000) => {
  const c = new LockClient({ redis: url, leaseMs });
  c.on('error', () => undefined);
  clients.push(c);
  return c;
};

describe('faults: limits (failover, clock steps)', (it) => {
  it.after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(servers.map((s) => s.stop()));
  });

  it('a failover to a replica that missed the acquire lets a second holder in; the fence rejects the first', async () => {
    const primary = await startPrivateRedis();
    const replica = await startPrivateRedis({ args: ['--replicaof', primary.host, String(primary.port)] });
    const storage = await startPrivateRedis();
    servers.push(primary, replica, storage);
    const replicaAdmin = replica.connect();
    await eventually(async () => /master_link_status:up/.test(await replicaAdmin.info('replication')), 'replica in sync', 10_000);
    const name = uniqueName('failover');
    const first = client(primary.url);
    await first.lock(uniqueName()).isLocked(); // connected

    // The replica is cut off from the primary and promoted by the failover (replication is
    // asynchronous: the primary does not wait for it), the old primary takes the acquire before it
    // learns, then dies. (Stopping the replica instead is not enough: the primary's replication
    // stream waits in the replica's socket buffer and is applied when it resumes.)
    await replicaAdmin.replicaof('NO', 'ONE');
    const a = await first.lock(name).acquire();
    await primary.kill();

    const second = client(replica.url);
    const b = await second.lock(name).acquire({ waitMs: 0 }); // the promoted replica never saw `a`
    const bothHeld = !a.signal.aborted && !b.signal.aborted;
    assert.ok(bothHeld, 'two holders at once: the limit of a single-primary lock under failover');
    assert.ok(b.fencingToken > a.fencingToken, `tokens still increase across the failover (${a.fencingToken} -> ${b.fencingToken}): Redis TIME floors them`);

    const store = storage.connect();
    const write = (value: string, token: number) => store.eval(FENCED_SET, 2, 'counter', 'highest', value, token);
    assert.is(await write('written by b', b.fencingToken), 1);
    assert.is(await write('written by a', a.fencingToken), 0, 'the stale holder is fenced off');
    assert.is(await store.get('counter'), 'written by b');
    // The first holder cannot renew on a dead primary: it is told within its lease.
    await eventually(() => a.signal.aborted, 'the first holder learns of its loss', 3_000);
    console.log(
      `[faults] failover to a replica that missed the acquire: holders at once 2, tokens ${a.fencingToken} -> ${b.fencingToken}, stale write rejected 1, first holder signalled lost 1`,
    );
    await b.release();
  });

  it('a forward step of the Redis clock shortens leases: a second holder gets in before the first is told', async () => {
    const redis = await startPrivateRedis();
    const storage = await startPrivateRedis();
    servers.push(redis, storage);
    const admin = redis.connect();
    const name = uniqueName('clock-forward');
    const first = client(redis.url, 3_000); // renewed every 1 s
    const second = client(redis.url, 3_000);
    const a = await first.lock(name).acquire();
    // A forward step of 3 s on the Redis host: every lease loses 3 s, this one expires now.
    await admin.pexpire(`relock:{${name}}`, 1);
    const b = await second.lock(name).acquire({ waitMs: 1_000 });
    const window = !a.signal.aborted;
    assert.ok(window, 'the first holder still believes it holds: it learns at its next renewal');
    const store = storage.connect();
    const write = (value: string, token: number) => store.eval(FENCED_SET, 2, 'counter', 'highest', value, token);
    assert.is(await write('b', b.fencingToken), 1);
    assert.is(await write('a', a.fencingToken), 0, 'the fence rejects the first holder');
    await eventually(() => a.signal.aborted, 'the first holder is told at its next renewal', 2_000);
    console.log('[faults] Redis clock stepped forward by the lease: holders at once 2 until the next renewal (<= leaseMs/3), stale write rejected 1');
    await b.release();
  });

  it('a backward step of the Redis clock: tokens still increase while the fence key lives, not after it expired', async () => {
    const redis = await startPrivateRedis();
    servers.push(redis);
    const admin = redis.connect();
    const name = uniqueName('clock-back');
    const c = client(redis.url);
    const [seconds = 0, micros = 0] = await admin.time();
    const nowUs = Number(seconds) * 1_000_000 + Number(micros);
    // Tokens issued before a one-hour backward step of the clock: the last is an hour ahead of TIME.
    const issued = nowUs + 3_600_000_000;
    await admin.set(`relock:{${name}}:fence`, String(issued));
    const kept = await c.lock(name).acquire();
    await kept.release();
    assert.is(kept.fencingToken, issued + 1, 'while the fence key lives, the next token is last + 1');
    // The fence key expired (fenceTtlMs) before the clock caught up again: TIME is the only floor.
    await admin.del(`relock:{${name}}:fence`);
    const lost = await c.lock(name).acquire();
    await lost.release();
    assert.ok(lost.fencingToken < kept.fencingToken, 'tokens went backwards: the limit a long fenceTtlMs guards against');
    console.log(
      `[faults] Redis clock stepped back 1 h: with the fence key ${issued} -> ${kept.fencingToken} (increasing); after its expiry -> ${lost.fencingToken} (lower: the limit)`,
    );
  });
});
