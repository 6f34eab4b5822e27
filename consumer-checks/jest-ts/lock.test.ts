import { afterAll, beforeAll, expect, test } from '@jest/globals';
import { LockClient, LockTimeoutError } from 'relock';
import { startRedis, type TestRedis } from 'relock/testing';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis({ sources: ['redis-server'] });
});
afterAll(() => redis.stop());

test('locks, re-enters and times out through import from "relock"', async () => {
  const client = new LockClient({ redis: redis.url });
  try {
    const name = `jest-${Math.random()}`;
    const lock = client.lock(name);
    const count = await lock.runExclusive(() => lock.runExclusive(async (lease) => lease.holdCount));
    expect(count).toBe(2);
    const held = await lock.acquire();
    await expect(client.lock(name).acquire({ waitMs: 50 })).rejects.toBeInstanceOf(LockTimeoutError);
    await held.release();
  } finally {
    await client.close();
  }
});
