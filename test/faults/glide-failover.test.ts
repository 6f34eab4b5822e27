// A fair lock on a GLIDE Cluster whose shard fails over again and again (CLUSTER FAILOVER on the
// lock shard's replica: coordinated, no acknowledged write lost) while three GLIDE clients contend:
// each loops acquire, the racy fenced read-modify-write of the fault suite on a storage Redis,
// release. GLIDE leaves its sharded subscriptions on the old master, a replica now, where the grant
// script's receiver count (on the new master) never sees them: relock moves them (docs/cluster.md)
// and serves a waiter dropped meanwhile through its heartbeat (docs/fair-lock.md). The checker judges
// the run: no overlap, no lost update, and no starved waiter (an acquire not served within
// STARVED_MS is a waiter that never got the lock, a problem of its own).
import * as assert from 'uvu/assert';
import { GlideClusterClient, Logger } from '@valkey/valkey-glide';
import { LockClient, LockError, LockTimeoutError, type Lease } from '../../src/index.ts';
import type { AnyRedisClient } from '../../src/options.ts';
import { keySlot } from '../../src/runtime/slot.ts';
import { SHARDED_PUBSUB, startCluster, type RedisCluster } from '../helpers/cluster.ts';
import { describe, eventually, uniqueName } from '../helpers/describe.ts';
import { startPrivateRedis, type RedisServer } from '../helpers/redis.ts';
import { admin, closeAdmins } from '../integration/cluster/support.ts';
import { check, type Fault } from './checker.ts';
import { sized } from './harness.ts';
import { FENCED_SET, now, type Entry, type Hung } from './protocol.ts';

Logger.setLoggerConfig('off');

const WORKERS = 3;
const FAILOVERS = sized(2, 6);
/**
 * A waiter not served within this is starved. Three clients hold HOLD_MS each: a turn comes in well
 * under a second; across a failover, within the move of its subscription (about 2 s) or its
 * heartbeat's grant, whichever comes first. The rest is room for a loaded machine: 6 s was once too
 * little in the client matrix, whose cells run side by side on two cores (an acquire's attempts
 * timed out while GLIDE reached the new master: "Redis could not be reached"). A starved waiter
 * never gets a turn, so 10 s tells it apart as well.
 */
const STARVED_MS = 10_000;
/** How long each section holds the lock. */
const HOLD_MS = 40;
/** How long the clients contend after each failover (the subscriptions move meanwhile). */
const AFTER_MS = 7_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let cluster: RedisCluster;
let storage: RedisServer;
const closers: (() => unknown)[] = [];

/** A coordinated failover of `master`'s shard: CLUSTER FAILOVER on its replica (again until it happened), then the old master steps down. */
async function failover(master: RedisServer): Promise<void> {
  const [replica] = await cluster.replicasOf(master);
  if (!replica) throw new Error(`master ${master.port} has no replica`);
  const promoted = async () => /role:master/.test(String(await admin(replica).info('replication')));
  for (let attempt = 0; !(await promoted()); attempt++) {
    if (attempt === 5) throw new Error(`replica ${replica.port} was not promoted by CLUSTER FAILOVER`);
    await admin(replica).call('CLUSTER', 'FAILOVER');
    await eventually(promoted, 'the replica promoted', 5_000).catch(() => undefined);
  }
  await eventually(async () => /role:slave/.test(String(await admin(master).info('replication'))), 'the old master stepped down', 15_000);
}

describe('faults: a fair lock on a GLIDE Cluster across failovers of its shard', (it) => {
  if (!SHARDED_PUBSUB) return;
  it.before(async () => {
    cluster = await startCluster({ masters: 3, replicas: 1 });
    storage = await startPrivateRedis();
  });
  it.after(async () => {
    for (const close of closers.reverse()) await close();
    closeAdmins(cluster.nodes);
    await cluster.stop();
    await storage.stop();
  });

  it(`${WORKERS} GLIDE clients contend through ${FAILOVERS} failovers: no overlap, no waiter starved (${STARVED_MS} ms)`, async () => {
    const name = uniqueName('glide-failover');
    const clients: LockClient[] = [];
    for (let i = 0; i < WORKERS; i++) {
      const glide = await GlideClusterClient.createClient({ addresses: cluster.nodes.map(({ host, port }) => ({ host, port })), requestTimeout: 2_000 });
      closers.push(() => glide.close());
      const client = new LockClient({ redis: glide as unknown as AnyRedisClient, leaseMs: 10_000 });
      client.on('error', () => undefined);
      closers.push(() => client.close());
      clients.push(client);
    }
    const store = storage.connect();
    closers.push(() => store.disconnect());
    const counter = `counter:${name}`;
    const highest = `highest:${name}`;
    const entries: Entry[] = [];
    const hung: Hung[] = [];
    const faults: Fault[] = [];
    let stop = false;

    const loop = async (worker: number) => {
      for (let round = 0; !stop; round++) {
        const asked = now();
        let lease: Lease;
        try {
          lease = await clients[worker]!.fairLock(name).acquire({ waitMs: STARVED_MS });
        } catch (error) {
          // A wait rides out an unreachable Redis until it ends, then says so: either way the waiter
          // was not served within STARVED_MS. Any other error ends the loop, and the test with it.
          if (!(error instanceof LockTimeoutError) && !(error instanceof LockError && error.code === 'ERR_LOCK_UNREACHABLE')) throw error;
          hung.push({ worker, loop: round, waitingMs: now() - asked, ...(error instanceof LockTimeoutError ? {} : { cause: error.code }) });
          continue;
        }
        const start = now();
        const entry: Entry = { worker, loop: round, token: lease.fencingToken, asked, start, end: start, waitMs: start - asked, read: -1, write: 'none', lostAt: null };
        lease.signal.addEventListener('abort', () => (entry.lostAt = now()), { once: true });
        entries.push(entry);
        const read = Number((await store.get(counter)) ?? 0);
        entry.read = read;
        entry.end = now();
        // A hold long beside the hand-over: the lock is almost never free between two turns, and a
        // waiter dropped from the queue cannot count on its heartbeat finding it free.
        await sleep(HOLD_MS);
        if (!lease.signal.aborted) {
          entry.sentAt = now();
          entry.write = (await store.eval(FENCED_SET, 2, counter, highest, read + 1, lease.fencingToken)) === 1 ? 'ok' : 'stale';
          entry.end = now();
        }
        entry.release = await lease.release().then(
          () => 'ok',
          (error: { code?: string; name: string }) => error.code ?? error.name,
        );
      }
    };

    // Each loop's error is kept (no unhandled rejection while the failovers go on) and rethrown below.
    const failed: unknown[] = [];
    const loops = clients.map((_, worker) =>
      loop(worker).catch((error: unknown) => {
        failed.push(error);
        stop = true;
      }),
    );
    const started = Date.now();
    try {
      await eventually(() => new Set(entries.map((e) => e.worker)).size === WORKERS, 'every client held the lock once', 10_000);
      for (let i = 0; i < FAILOVERS && failed.length === 0; i++) {
        const master = await cluster.masterOf(keySlot(`relock:{${name}}:fair`));
        faults.push({ kind: 'failover', at: now() });
        await failover(master);
        await cluster.settled(30_000);
        // The clients contend on the new master for a while (and the subscriptions move) before the next.
        await sleep(AFTER_MS);
      }
    } finally {
      stop = true;
      await Promise.all(loops);
    }
    if (failed.length > 0) throw failed[0];
    const report = check({ entries, counter: Number((await store.get(counter)) ?? 0), faults, hung });
    console.log(
      `[faults] fair lock on a GLIDE Cluster, ${FAILOVERS} failovers of its shard: acquisitions ${report.acquisitions}, overlaps ${report.overlaps.length}, ` +
        `starved waiters ${hung.length}, longest wait ${Math.round(report.longestWaitMs)} ms, longest stall after a failover ${Math.round(report.longestStallMs)} ms, ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    assert.equal(report.problems, [], report.problems.join('\n'));
    assert.ok(report.acquisitions > FAILOVERS * WORKERS, `${report.acquisitions} acquisitions`);
  }, 180_000);
});
