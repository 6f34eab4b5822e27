// require('relock') under Jest: its module registry has no require(esm), so the CommonJS bundle must
// require no ES module.
const { LockClient, LockTimeoutError } = require('relock');
const { startRedis } = require('relock/testing');

let redis;
beforeAll(async () => {
  redis = await startRedis({ sources: ['redis-server'] });
});
afterAll(() => redis.stop());

test('locks, re-enters and times out through require("relock")', async () => {
  const client = new LockClient({ redis: redis.url });
  try {
    const lock = client.lock('jest-cjs');
    const count = await lock.runExclusive(() => lock.runExclusive(async (lease) => lease.holdCount));
    expect(count).toBe(2);
    const held = await lock.acquire();
    await expect(client.lock('jest-cjs').acquire({ waitMs: 50 })).rejects.toBeInstanceOf(LockTimeoutError);
    await held.release();
  } finally {
    await client.close();
  }
});
