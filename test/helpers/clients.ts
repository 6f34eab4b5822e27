// The client family the suites' LockClients run over (issue 19). By default relock makes its own
// ioredis connection from the URL (and the Cluster suites pass an ioredis Cluster); with
// RELOCK_TEST_CLIENT each LockClient gets a client of that family instead, made here and closed after
// its suite (`npm run test:clients` runs the suites once per family).
import { GlideClient, GlideClusterClient, Logger } from '@valkey/valkey-glide';
import { Cluster as ValkeyCluster, Valkey } from 'iovalkey';
import { createClient, createCluster } from 'redis';
import { createClient as createClient6, createCluster as createCluster6 } from 'redis-6';
import type { AnyRedisClient } from '../../src/options.ts';

/** The families: ioredis (relock's own connection), iovalkey, node-redis 5 (RESP2 and RESP3) and 6, GLIDE 2. */
export const TEST_CLIENTS = ['ioredis', 'iovalkey', 'node-redis', 'node-redis-resp3', 'node-redis-6', 'glide'] as const;
export type TestClient = (typeof TEST_CLIENTS)[number];

export const TEST_CLIENT = (process.env.RELOCK_TEST_CLIENT ?? 'ioredis') as TestClient;

/** The key layout the fault workers use: relock's, or Redisson's with RELOCK_TEST_LAYOUT=redisson (npm run test:clients). */
export const TEST_LAYOUT = process.env.RELOCK_TEST_LAYOUT === 'redisson' ? 'redisson' : 'relock';
if (!TEST_CLIENTS.includes(TEST_CLIENT)) throw new Error(`RELOCK_TEST_CLIENT=${TEST_CLIENT}: expected one of ${TEST_CLIENTS.join(', ')}`);

/** Something to close after the suite. */
export interface Closable {
  disconnect(): void;
}

const quiet = <C extends { on(event: 'error', listener: (error: Error) => void): unknown }>(client: C): C => {
  client.on('error', () => undefined);
  return client;
};

/** A node-redis client of the family, opened (not awaited: its commands queue until it is ready). */
function nodeRedis(url: string): AnyRedisClient & { destroy(): void; isOpen: boolean } {
  const client = TEST_CLIENT === 'node-redis-6' ? createClient6({ url }) : createClient({ url, RESP: TEST_CLIENT === 'node-redis-resp3' ? 3 : 2 });
  quiet(client).connect().catch(() => undefined);
  return client;
}

const closer = (client: { destroy(): void; isOpen: boolean }): Closable => ({ disconnect: () => client.isOpen && client.destroy() });

// GLIDE logs every error reply (a NOSCRIPT included) at WARN on stdout unless told otherwise.
if (TEST_CLIENT === 'glide') Logger.setLoggerConfig('off');

/**
 * A GLIDE client made synchronously, as the suites make their clients: createClient() is async, so
 * the suites get a stand-in that answers as the client created from `config` will (its class, its
 * `config`) and forwards every call to it, once created. glide.test.ts passes real clients.
 */
export function glideFor(config: Record<string, unknown>, cluster: boolean, connections?: Set<Closable>): AnyRedisClient {
  const Class = cluster ? GlideClusterClient : GlideClient;
  const made = (Class.createClient as (options: object) => Promise<GlideClient | GlideClusterClient>)(config);
  let real: Record<PropertyKey, unknown> | undefined;
  made.then((client) => (real = client as never), () => undefined);
  connections?.add({ disconnect: () => void made.then((client) => client.close(), () => undefined) });
  const prototype = Class.prototype as unknown as Record<PropertyKey, unknown>;
  return new Proxy(Object.create(prototype) as object, {
    get(_, property) {
      if (property === 'constructor') return Class;
      if (real) {
        const value = real[property];
        return typeof value === 'function' ? value.bind(real) : value;
      }
      if (property === 'config') return config;
      if (property === 'then') return undefined;
      const value = prototype[property];
      return typeof value === 'function' ? (...args: unknown[]) => made.then((client) => (client as never as Record<PropertyKey, (...a: unknown[]) => unknown>)[property]!(...args)) : value;
    },
  }) as AnyRedisClient;
}

/**
 * The GLIDE clients of the suites wait up to 2 s for an answer, as docs/clients.md advises: GLIDE's
 * default (250 ms) fails commands of a loaded test machine (glide.test.ts tests that default).
 */
const GLIDE_SETTINGS = { requestTimeout: 2_000 };

/** GLIDE's addresses for a redis:// URL. */
const addressOf = (url: string) => {
  const { hostname, port } = new URL(url);
  return { host: hostname, port: Number(port || 6379) };
};

/**
 * The settings docs/compatibility.md gives for the ioredis-family clients of a Redlock client: with
 * the defaults (20 retries, no command timeout) an acquire with a majority of masters dead waits
 * longer than the tests allow (measured: over 6 s).
 */
const REDLOCK_SETTINGS = { maxRetriesPerRequest: 2, commandTimeout: 5_000, retryStrategy: (n: number) => Math.min(n * 100, 1_000) };

/**
 * What a LockClient of the suites gets as `redis` for `url`: the URL, or a client of TEST_CLIENT's
 * family (closed with `connections`); `redlock`: one master of a Redlock client.
 */
export function redisFor(url: string, connections: Set<Closable>, redlock = false): string | AnyRedisClient {
  if (TEST_CLIENT === 'ioredis') return url;
  if (TEST_CLIENT === 'glide') return glideFor({ addresses: [addressOf(url)], ...GLIDE_SETTINGS }, false, connections);
  if (TEST_CLIENT === 'iovalkey') {
    const connection = quiet(redlock ? new Valkey(url, REDLOCK_SETTINGS) : new Valkey(url));
    connections.add(connection);
    return connection;
  }
  const client = nodeRedis(url);
  connections.add(closer(client));
  return client;
}

/**
 * A Cluster client of TEST_CLIENT's family over `nodes`, or undefined for ioredis (the cluster helper
 * makes its own). A node-redis Cluster is opened here; its first commands wait for its slot map.
 */
export function clusterFor(nodes: readonly { host: string; port: number }[], connections: Set<Closable>): AnyRedisClient | undefined {
  if (TEST_CLIENT === 'ioredis') return undefined;
  if (TEST_CLIENT === 'glide') return glideFor({ addresses: nodes.map(({ host, port }) => ({ host, port })), ...GLIDE_SETTINGS }, true, connections);
  if (TEST_CLIENT === 'iovalkey') {
    const cluster = quiet(new ValkeyCluster(nodes.map(({ host, port }) => ({ host, port }))));
    connections.add(cluster);
    return cluster;
  }
  const rootNodes = nodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` }));
  const cluster = TEST_CLIENT === 'node-redis-6' ? createCluster6({ rootNodes }) : createCluster({ rootNodes, RESP: TEST_CLIENT === 'node-redis-resp3' ? 3 : 2 });
  quiet(cluster).connect().catch(() => undefined);
  connections.add({ disconnect: () => cluster.isOpen && cluster.destroy() });
  return cluster;
}

/**
 * What a LockClient gets for ioredis-style `options` (host, port, username, password, tls): the
 * options themselves for ioredis, else a client of TEST_CLIENT's family for the same server (the
 * fault workers' clients). The process exits with its clients.
 */
export function redisForOptions(options: Record<string, unknown>): Record<string, unknown> | AnyRedisClient {
  if (TEST_CLIENT === 'ioredis') return options;
  if (TEST_CLIENT === 'iovalkey') return quiet(new Valkey(options as never));
  const { host, port, username, password, tls } = options as { host?: string; port?: number; username?: string; password?: string; tls?: { ca?: string | Buffer } };
  if (TEST_CLIENT === 'glide') {
    return glideFor(
      {
        addresses: [{ host: host ?? '127.0.0.1', port: port ?? 6379 }],
        ...GLIDE_SETTINGS,
        ...(password ? { credentials: { ...(username ? { username } : {}), password } } : {}),
        ...(tls ? { useTLS: true, ...(tls.ca ? { advancedConfiguration: { tlsAdvancedConfiguration: { rootCertificates: tls.ca } } } : {}) } : {}),
      },
      false,
    );
  }
  const socket = { host: host ?? '127.0.0.1', port: port ?? 6379, ...(tls ? { tls: true as const, ...tls } : {}) };
  const client =
    TEST_CLIENT === 'node-redis-6'
      ? createClient6({ socket, ...(username ? { username } : {}), ...(password ? { password } : {}) })
      : createClient({ socket, ...(username ? { username } : {}), ...(password ? { password } : {}), RESP: TEST_CLIENT === 'node-redis-resp3' ? 3 : 2 });
  quiet(client).connect().catch(() => undefined);
  return client;
}
