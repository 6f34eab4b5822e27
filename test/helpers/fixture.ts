// A suite's Redis and the clients its tests make, all closed after the suite.
import type { Redis } from 'ioredis';
import { Valkey } from 'iovalkey';
import { LockClient, type LockClientOptions } from '../../src/index.ts';
import type { It } from './describe.ts';
import { startRedis, type RedisServer, type StartOptions } from './redis.ts';

export interface Fixture {
  server: RedisServer;
  /** A plain connection for inspecting and arranging state. */
  admin: Redis;
  /** A LockClient on the suite's server, closed after the suite. */
  client(options?: LockClientOptions): LockClient;
  close(): Promise<void>;
}

/**
 * The client family the suites' LockClients run over (issue 19): by default relock makes its own
 * ioredis connection from the URL; RELOCK_TEST_CLIENT=iovalkey passes each LockClient an iovalkey
 * connection of its own instead (`npm run test:clients`).
 */
export const TEST_CLIENT = process.env.RELOCK_TEST_CLIENT ?? 'ioredis';
if (TEST_CLIENT !== 'ioredis' && TEST_CLIENT !== 'iovalkey') throw new Error(`RELOCK_TEST_CLIENT=${TEST_CLIENT}: expected ioredis or iovalkey`);

/** What a LockClient of the suites gets as `redis` for `url`: the URL, or a connection of TEST_CLIENT's (to close after it). */
export function redisFor(url: string, connections: Set<{ disconnect(): void }>): string | Valkey {
  if (TEST_CLIENT === 'ioredis') return url;
  const connection = new Valkey(url);
  connection.on('error', () => undefined);
  connections.add(connection);
  return connection;
}

export async function fixture(options: StartOptions = {}): Promise<Fixture> {
  const server = await startRedis(options);
  const admin = server.connect();
  const clients = new Set<LockClient>();
  const connections = new Set<{ disconnect(): void }>();
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
