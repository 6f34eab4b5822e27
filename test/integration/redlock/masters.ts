// N private redis-servers for a Redlock suite, a plain connection to each, and the clients the suite
// makes over all of them; everything is stopped after the suite.
import type { Redis } from 'ioredis';
import * as assert from 'uvu/assert';
import { LockClient, LockError, type LockClientOptions } from '../../../src/index.ts';
import { redisFor } from '../../helpers/fixture.ts';
import type { It } from '../../helpers/describe.ts';
import { startRedis, type RedisServer } from '../../helpers/redis.ts';

export interface Masters {
  servers: RedisServer[];
  /** A plain connection per master, for arranging and inspecting state. */
  admins: Redis[];
  urls: string[];
  /** A Redlock LockClient over every master, closed after the suite; `error` events are swallowed. */
  client(options?: Omit<LockClientOptions, 'redis'>): LockClient;
  close(): Promise<void>;
}

export async function startMasters(n: number): Promise<Masters> {
  const servers = await Promise.all(Array.from({ length: n }, () => startRedis({ private: true })));
  const admins = servers.map((server) => server.connect());
  const urls = servers.map((server) => server.url);
  const clients = new Set<LockClient>();
  const connections = new Set<{ disconnect(): void }>();
  return {
    servers,
    admins,
    urls,
    client(options = {}) {
      const client = new LockClient({ ...options, redis: urls.map((url) => redisFor(url, connections, true)) });
      client.on('error', () => undefined);
      clients.add(client);
      return client;
    },
    async close() {
      await Promise.all([...clients].map((client) => client.close()));
      for (const connection of connections) connection.disconnect();
      await Promise.all(servers.map((server) => server.stop()));
    },
  };
}

/** The suite's masters, started before its first test and stopped after its last. */
export function setupMasters(it: It, n: number): Masters {
  const holder = {} as Masters;
  it.before(async () => {
    Object.assign(holder, await startMasters(n));
  });
  it.after(() => holder.close());
  return holder;
}

/** The lock hash key of `name` under the default prefix. */
export const lockKey = (name: string) => `relock:{${name}}`;

/**
 * Asserts that `make` (a factory call) throws `ERR_LOCK_UNSUPPORTED` naming `call` on a Redlock client
 * of `masters` and in the Redisson layout: refused before any I/O, for a kind only relock's layout on
 * one server or a Cluster offers.
 */
export async function assertRelockLayoutOnly(masters: Masters, call: string, make: (client: LockClient) => unknown): Promise<void> {
  const redlock = masters.client();
  const redisson = new LockClient({ redis: masters.urls[0]!, layout: 'redisson' });
  try {
    for (const client of [redlock, redisson]) {
      assert.throws(
        () => make(client),
        (error: Error) => error instanceof LockError && error.code === 'ERR_LOCK_UNSUPPORTED' && error.message.includes(`${call}(`),
      );
    }
  } finally {
    await redisson.close();
  }
}
