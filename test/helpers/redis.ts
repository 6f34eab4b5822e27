// Where the tests get Redis: the code users get as `relock/testing` (src/testing/): REDIS_URL if
// set; else a private redis-server on a free port; else a testcontainers Redis when a Docker engine
// answers; else a failure that says how to provide one. On top of it, what only relock's own tests
// need: connections closed with the server, and kill() and restart() of a private server.
import { Redis } from 'ioredis';
import { eventually } from './describe.ts';
import { locate, SOURCES, type Located } from '../../src/testing/locate.ts';

export { freePort, hasRedisServer } from '../../src/testing/server.ts';

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
  /** Freezes the server (SIGSTOP): its connections stay open and silent until resume(). */
  pause(): void;
  /** Wakes a paused server (SIGCONT). */
  resume(): void;
  stop(): Promise<void>;
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

function wrap(found: Located, connectOptions: Record<string, unknown> = {}): RedisServer {
  const connections = new Set<Redis>();
  const { server } = found;
  const refuse = async () => {
    throw new Error(`This test needs a private redis-server (it kills or restarts it); this one comes from ${found.source}`);
  };
  const signal = (name: NodeJS.Signals) => {
    if (server?.pid === undefined) throw new Error(`This test needs a private, running redis-server (it pauses it); this one comes from ${found.source}`);
    process.kill(server.pid, name);
  };
  return {
    url: found.url,
    host: found.host,
    port: found.port,
    private: server !== undefined,
    connect() {
      const connection = server ? new Redis({ host: found.host, port: found.port, ...connectOptions }) : new Redis(found.url);
      connection.on('error', () => undefined);
      connections.add(connection);
      return connection;
    },
    kill: server ? () => server.kill() : refuse,
    restart: server ? () => server.restart() : refuse,
    pause: () => signal('SIGSTOP'),
    resume: () => signal('SIGCONT'),
    async stop() {
      for (const connection of connections) connection.disconnect();
      await found.stop();
    },
  };
}

/** Redis for a suite, found as the README says: REDIS_URL, redis-server, or Docker. */
export async function startRedis(options: StartOptions = {}): Promise<RedisServer> {
  const found = await locate({
    sources: options.private ? ['redis-server'] : SOURCES,
    args: options.args ?? [],
    image: 'redis:7-alpine',
    timeoutMs: undefined,
    connectOptions: options.connectOptions,
    readyPort: options.readyPort,
  });
  return wrap(found, options.connectOptions);
}

/** A private redis-server process on a free port. */
export async function startPrivateRedis(options: StartOptions = {}): Promise<RedisServer> {
  return startRedis({ ...options, private: true });
}

/** A private redis-server replicating `primary`, once its link to it is up (within 10 s). */
export async function startReplicaOf(primary: RedisServer): Promise<RedisServer> {
  const replica = await startPrivateRedis({ args: ['--replicaof', primary.host, String(primary.port)] });
  await eventually(async () => /master_link_status:up/.test(await replica.connect().info('replication')), 'replica in sync', 10_000);
  return replica;
}
