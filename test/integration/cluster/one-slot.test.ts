// One slot per script call (issue 20, point 3): on a Cluster, every script call relock makes names
// at least one key, and every key it names (the channel it publishes on is one of them) hashes to one
// slot: for every kind, over names and prefixes with braces, through acquire, wait and wake-up,
// re-entry, renewal, reads, release and force-unlock. Recorded at the user's Cluster connection.
import * as assert from 'uvu/assert';
import type { Cluster } from 'ioredis';
import { LockClient } from '../../../src/index.ts';
import { keySlot } from '../../../src/runtime/slot.ts';
import { clusterSuite, SHARDED_PUBSUB, type RedisCluster } from '../../helpers/cluster.ts';
import { describe, eventually } from '../../helpers/describe.ts';
import { sleep } from '../../helpers/fixture.ts';

interface Call {
  readonly keys: readonly string[];
}

/** The Cluster connection, recording the keys of each EVALSHA and EVAL it sends. */
function recording(cluster: Cluster, calls: Call[]): Cluster {
  return new Proxy(cluster, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (property === 'evalsha' || property === 'eval') {
        return (...args: unknown[]) => {
          const count = Number(args[1]);
          calls.push({ keys: args.slice(2, 2 + count).map(String) });
          return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        };
      }
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

let cluster: RedisCluster;

describe('Redis Cluster: one slot per script call, a key in every one', (it) => {
  clusterSuite(it, { masters: 3 }, (started) => (cluster = started));

  for (const prefix of ['relock', '{tenant}', 'a}b', 'a{b']) {
    it(`every kind, names with braces, prefix ${prefix}`, async () => {
      const calls: Call[] = [];
      // A short lease: the holds below are renewed (the renewal's batches are script calls too).
      const client = new LockClient({ redis: recording(cluster.connect(), calls), prefix, leaseMs: 600 });
      const other = new LockClient({ redis: recording(cluster.connect(), calls), prefix, leaseMs: 600 });
      try {
        for (const name of ['plain', '}x', '{}', 'a{b}c', 'x}{y}', '{']) {
          const lock = client.lock(name);
          const lease = await lock.acquire();
          const nested = await lease.run(() => lock.acquire());
          const waiting = other.lock(name).acquire({ waitMs: 5_000 });
          await eventually(() => other.waiting === 1, 'queued');
          await lock.isLocked();
          await lock.remainingTtlMs();
          await nested.release();
          await lease.release();
          await (await waiting).release();
          const rw = client.readWriteLock(name);
          const read = await rw.readLock().acquire();
          const writer = other.readWriteLock(name).writeLock().acquire({ waitMs: 5_000 });
          await eventually(() => other.waiting === 1, 'the writer queued');
          await read.release();
          await (await writer).release();
          const semaphore = client.semaphore(name, { permits: 2 });
          const permits = await semaphore.acquire({ permits: 2 });
          await semaphore.availablePermits();
          await permits.release();
          const latch = client.countDownLatch(name);
          await latch.trySetCount(1);
          const opened = other.countDownLatch(name).wait({ waitMs: 5_000 });
          await latch.countDown();
          await opened;
          const held = await client.lock(name).acquire();
          await sleep(250); // a renewal round
          await client.lock(name).forceUnlock();
          await eventually(() => held.signal.aborted, 'the forced hold lost');
        }
        // The fair lock needs sharded pub/sub on a Cluster (refused on Redis 6.0: names.test.ts).
        if (SHARDED_PUBSUB) await (await client.fairLock('}f').acquire()).release();
        const both = await client.multiLock([client.lock('m{1}'), client.lock('}m2')]).acquire();
        await both.release();
      } finally {
        await Promise.all([client.close(), other.close()]);
      }
      assert.ok(calls.length > 100, `${calls.length} script calls recorded`);
      const keyless = calls.filter((call) => call.keys.length === 0);
      assert.is(keyless.length, 0, 'no script call without a key');
      const spread = calls.filter((call) => new Set(call.keys.map(keySlot)).size > 1);
      assert.equal(spread.map((call) => call.keys), [], 'every call\'s keys in one slot');
    }, 60_000);
  }
});
