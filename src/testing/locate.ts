// Finds a Redis for tests: the sources in order, each either giving a Redis or saying why not.
// Internal: startRedis() in index.ts is the public face; relock's own tests (test/helpers/redis.ts)
// call locate() for the private server's kill() and restart().
import { ContainerUnavailable, startContainer } from './container.ts';
import { hasRedisServer, ping, startPrivateServer, type PrivateServer } from './server.ts';

/** Where a Redis for tests can come from, tried in this order by default. */
export type RedisSource = 'REDIS_URL' | 'redis-server' | 'testcontainers';

export const SOURCES: readonly RedisSource[] = ['REDIS_URL', 'redis-server', 'testcontainers'];

export interface LocateOptions {
  sources: readonly RedisSource[];
  args: readonly string[];
  image: string;
  /** Each source's own default when undefined: 10 s, 2 min for a container (it may pull an image). */
  timeoutMs: number | undefined;
  /** Internal (relock's TLS and ACL tests): how the readiness probe connects. */
  connectOptions?: Record<string, unknown> | undefined;
  /** Internal: the port the readiness probe uses, when args make the server listen elsewhere. */
  readyPort?: number | undefined;
}

export interface Located {
  readonly source: RedisSource;
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Set for a private redis-server: the process, which may be killed and restarted. */
  readonly server?: PrivateServer;
  stop(): Promise<void>;
}

const INSTALL_REDIS = 'install Redis (apt-get install redis-server, brew install redis)';
const ADVICE: Record<RedisSource, string> = {
  REDIS_URL: 'set REDIS_URL=redis://host:port',
  'redis-server': `put redis-server on the PATH (${INSTALL_REDIS})`,
  testcontainers: 'install testcontainers (npm i -D testcontainers) and start a Docker engine',
};

async function fromEnv(timeoutMs: number): Promise<Located | string> {
  const url = process.env.REDIS_URL;
  if (!url) return 'REDIS_URL is not set';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error(`REDIS_URL is not a URL: ${JSON.stringify(url)} (expected redis://host:port)`);
  }
  // A URL the user set that does not answer is an error, not a reason to start something else.
  if (!(await ping(url, { connectTimeout: timeoutMs }))) throw new Error(`REDIS_URL=${url} does not answer PING`);
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  return { source: 'REDIS_URL', url, host, port: Number(parsed.port || 6379), stop: async () => undefined };
}

async function fromServer(options: LocateOptions): Promise<Located | string> {
  if (!hasRedisServer()) return `redis-server is not on the PATH (${INSTALL_REDIS})`;
  const server = await startPrivateServer({ ...options, timeoutMs: options.timeoutMs ?? 10_000 });
  return { source: 'redis-server', url: server.url, host: server.host, port: server.port, server, stop: () => server.stop() };
}

async function fromContainer(options: LocateOptions): Promise<Located | string> {
  try {
    const container = await startContainer(options.image, options.timeoutMs ?? 120_000);
    const url = `redis://${container.host.includes(':') ? `[${container.host}]` : container.host}:${container.port}`;
    let stopped: Promise<void> | undefined;
    return { source: 'testcontainers', url, host: container.host, port: container.port, stop: () => (stopped ??= container.stop()) };
  } catch (error) {
    if (error instanceof ContainerUnavailable) return `testcontainers: ${error.message}`;
    throw error;
  }
}

/** The first source that gives a Redis; an error naming why each one did not, when none does. */
export async function locate(options: LocateOptions): Promise<Located> {
  const reasons: string[] = [];
  for (const source of options.sources) {
    const found =
      source === 'REDIS_URL' ? await fromEnv(options.timeoutMs ?? 10_000) : source === 'redis-server' ? await fromServer(options) : await fromContainer(options);
    if (typeof found !== 'string') return found;
    reasons.push(found);
  }
  const advice = options.sources.map((source) => ADVICE[source]).join(', or ');
  throw new Error(`No Redis for the tests: ${reasons.join('; ')}. To provide one: ${advice}.`);
}
