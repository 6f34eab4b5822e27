// A suite's Redis and the clients its tests make, all closed after the suite.
import type { Redis } from 'ioredis';
import { LockClient, type LockClientOptions } from '../../src/index.ts';
import type { It } from './describe.ts';
import { redisFor, type Closable } from './clients.ts';
import { startRedis, type RedisServer, type StartOptions } from './redis.ts';

export { redisFor, TEST_CLIENT } from './clients.ts';

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
  const connections = new Set<Closable>();
  return {
    server,
    admin,
    client(clientOptions = {}) {
      const client = new LockClient({ redis: clientOptions.redis ?? redisFor(server.url, connections), ...clientOptions });
      clients.add(client);
      return client;
    },
    async close() {
      await Promise.all([...clients].map((client) => client.close()));
      for (const connection of connections) connection.disconnect();
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

/** Script calls (EVALSHA and EVAL) so far over every server given (INFO commandstats). */
export async function scriptCalls(...admins: Redis[]): Promise<number> {
  let calls = 0;
  for (const admin of admins) {
    const stats = await commandStats(admin);
    calls += (stats.evalsha ?? 0) + (stats.eval ?? 0);
  }
  return calls;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A suite's fixture and two clients on it, filled in before the suite's first test. */
export interface Suite {
  f: Fixture;
  client: LockClient;
  other: LockClient;
}

/** Starts the suite's Redis before its tests and stops it, with every client, after them. */
export function setup(it: It, clientOptions: LockClientOptions = {}, otherOptions: LockClientOptions = {}, start: StartOptions = {}): Suite {
  const suite = {} as Suite;
  it.before(async () => {
    suite.f = await fixture(start);
    suite.client = suite.f.client(clientOptions);
    suite.other = suite.f.client(otherOptions);
  });
  it.after(() => suite.f.close());
  return suite;
}
