// A suite's Redis and the clients its tests make, all closed after the suite.
import type { Redis } from 'ioredis';
import { LockClient, type LockClientOptions } from '../../src/index.ts';
import { startRedis, type RedisServer, type StartOptions } from './redis.ts';

export interface Fixture {
  server: RedisServer;
  /** A plain connection for inspecting and arranging state. */
  admin: Redis;
  /** A LockClient on the suite's server, closed after the suite. */
  client(options?: LockClientOptions): LockClient;
  close(): Promise<void>;
}

export async function fixture(options: StartOptions = {}): Promise<Fixture> {
  const server = await startRedis(options);
  const admin = server.connect();
  const clients = new Set<LockClient>();
  return {
    server,
    admin,
    client(clientOptions = {}) {
      const client = new LockClient({ redis: server.url, ...clientOptions });
      clients.add(client);
      return client;
    },
    async close() {
      await Promise.all([...clients].map((client) => client.close()));
      await server.stop();
    },
  };
}

/** Sum of `calls` over INFO commandstats, per command (lower-case). */
export async function commandStats(redis: Redis): Promise<Record<string, number>> {
  const info = await redis.info('commandstats');
  const stats: Record<string, number> = {};
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) stats[match[1]!] = Number(match[2]);
  return stats;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
