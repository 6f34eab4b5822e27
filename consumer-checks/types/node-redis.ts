// A project with node-redis and neither ioredis nor GLIDE.
import { createClient } from 'redis';
import { LockClient } from 'relock';
import { startRedis } from 'relock/testing';

export async function lockOnce(): Promise<number> {
  const server = await startRedis();
  const redis = await createClient({ url: server.url }).connect();
  const client = new LockClient({ redis, leaseMs: 10_000 });
  // @ts-expect-error -- leasMs is no option
  void new LockClient({ redis, leasMs: 10_000 });
  const count = await client.lock('job').runExclusive(async (lease) => lease.holdCount);
  await client.close();
  await redis.close();
  await server.stop();
  return count;
}
