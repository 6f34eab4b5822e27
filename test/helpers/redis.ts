// Where the tests get Redis: REDIS_URL if set; else a private redis-server on a free port; else a
// testcontainers Redis when a Docker engine answers; else a failure that says how to provide one.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';

export interface RedisServer {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** True for a redis-server this process started: it may be killed, paused and restarted. */
  readonly private: boolean;
  /** A new connection to the server, closed by stop(). */
  connect(): Redis;
  /** Stops the server (SIGKILL) and keeps its port, for restart(). */
  kill(): Promise<void>;
  /** Starts it again on the same port. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

export function hasRedisServer(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

async function ping(host: string, port: number, extra: Record<string, unknown> = {}): Promise<boolean> {
  const probe = new Redis({ host, port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, ...extra });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

function spawnServer(port: number, dir: string, args: readonly string[]): ChildProcess {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...args],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

async function waitUntil(ok: () => Promise<boolean>, what: string, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > until) throw new Error(`Timed out waiting for ${what}`);
    await sleep(20);
  }
}

export interface StartOptions {
  /** Extra redis-server arguments (only for a private server). */
  args?: readonly string[];
  /** Demand a private redis-server even when REDIS_URL is set (fault tests kill it). */
  private?: boolean;
  /** How a client connects, when the server wants more than host and port (TLS, ACL). */
  connectOptions?: Record<string, unknown>;
  /** The port to wait on when args make the server listen elsewhere (TLS). */
  readyPort?: number;
}

/** A private redis-server process on a free port. */
export async function startPrivateRedis(options: StartOptions = {}): Promise<RedisServer> {
  if (!hasRedisServer()) throw new Error('redis-server is not on the PATH: install it (apt-get install redis-server) to run this test');
  const host = '127.0.0.1';
  const dir = mkdtempSync(join(tmpdir(), 'relock-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const connections = new Set<Redis>();
  const start = async () => {
    child = spawnServer(port, dir, options.args ?? []);
    const started = child;
    const exited = new Promise<boolean>((resolve) => started.once('exit', () => resolve(false)));
    await waitUntil(
      async () => {
        if (started.exitCode !== null) throw new Error(`redis-server on port ${port} exited with code ${started.exitCode}`);
        return Promise.race([ping(host, options.readyPort ?? port, options.connectOptions), exited]);
      },
      `redis-server on port ${port}`,
    );
  };
  const kill = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    url: `redis://${host}:${port}`,
    host,
    port,
    private: true,
    connect() {
      const connection = new Redis({ host, port, ...options.connectOptions });
      connection.on('error', () => undefined);
      connections.add(connection);
      return connection;
    },
    kill,
    async restart() {
      await kill();
      await start();
    },
    async stop() {
      for (const connection of connections) connection.disconnect();
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function external(url: string): RedisServer {
  const parsed = new URL(url);
  const connections = new Set<Redis>();
  const refuse = async () => {
    throw new Error('This test needs a private redis-server (it kills or restarts it); REDIS_URL points at a shared one');
  };
  return {
    url,
    host: parsed.hostname,
    port: Number(parsed.port || 6379),
    private: false,
    connect() {
      const connection = new Redis(url);
      connection.on('error', () => undefined);
      connections.add(connection);
      return connection;
    },
    kill: refuse,
    restart: refuse,
    async stop() {
      for (const connection of connections) connection.disconnect();
    },
  };
}

async function dockerRedis(): Promise<RedisServer | undefined> {
  let GenericContainer: typeof import('testcontainers').GenericContainer;
  try {
    ({ GenericContainer } = await import('testcontainers'));
  } catch {
    return undefined;
  }
  try {
    const container = await new GenericContainer('redis:7-alpine').withExposedPorts(6379).start();
    const server = external(`redis://${container.getHost()}:${container.getMappedPort(6379)}`);
    return { ...server, stop: async () => (await server.stop(), void (await container.stop())) };
  } catch {
    return undefined; // no Docker engine answered
  }
}

/** Redis for a suite, found as the README says: REDIS_URL, redis-server, or Docker. */
export async function startRedis(options: StartOptions = {}): Promise<RedisServer> {
  const url = process.env.REDIS_URL;
  if (url && !options.private) return external(url);
  if (hasRedisServer()) return startPrivateRedis(options);
  if (!options.private) {
    const docker = await dockerRedis();
    if (docker) return docker;
  }
  throw new Error(
    'No Redis for the tests: set REDIS_URL=redis://host:port, install redis-server (apt-get install redis-server), or start a Docker engine for testcontainers',
  );
}
