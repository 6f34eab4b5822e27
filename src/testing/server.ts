// A private redis-server process on a free port: no persistence, killed on stop() and when this
// process exits. Internal: `relock/testing` exposes it through startRedis(); relock's own tests
// also use kill() and restart() (test/helpers/redis.ts).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ioredis } from '../port/ioredis-connection.ts';

export interface PrivateServerOptions {
  /** Extra redis-server arguments. */
  args?: readonly string[] | undefined;
  /** How a client connects, when the server wants more than host and port (TLS, ACL). */
  connectOptions?: Record<string, unknown> | undefined;
  /** The port to wait on when args make the server listen elsewhere (TLS). */
  readyPort?: number | undefined;
  /** How long the server may take to answer PING. */
  timeoutMs: number;
}

export interface PrivateServer {
  readonly host: string;
  readonly port: number;
  readonly url: string;
  /** The running process's id, undefined while killed. */
  readonly pid: number | undefined;
  /** Kills the process (SIGKILL) and keeps its port and directory, for restart(). */
  kill(): Promise<void>;
  /** Starts it again on the same port. */
  restart(): Promise<void>;
  /** Kills it and removes its directory. Idempotent. */
  stop(): Promise<void>;
}

const children = new Set<ChildProcess>();
let exitHook = false;

/** The signals that end a test run from outside (a runner's timeout, a CI cancel, Ctrl-C, a closed terminal). */
const ENDING_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

function killAll(): void {
  for (const running of children) running.kill('SIGKILL');
}

/**
 * Kills the servers, then lets the signal do what it would have done: when nobody else listens,
 * Node's default (the process ends by the signal) is restored and the signal raised again; when
 * someone does (a test runner's shutdown), the decision is theirs.
 */
function onEndingSignal(signal: NodeJS.Signals): void {
  killAll();
  if (process.listenerCount(signal) > 1) return;
  for (const name of ENDING_SIGNALS) process.off(name, onEndingSignal);
  process.kill(process.pid, signal);
}

/**
 * Kills every server still running when the process exits, however it exits normally, and when a
 * signal ends it (without a listener, SIGTERM and SIGINT end Node before any 'exit' listener runs).
 */
function track(child: ChildProcess): void {
  if (!exitHook) {
    exitHook = true;
    process.on('exit', killAll);
    for (const signal of ENDING_SIGNALS) process.on(signal, onEndingSignal);
  }
  children.add(child);
  child.once('exit', () => children.delete(child));
}

/** True when `redis-server` on the PATH runs. */
export function hasRedisServer(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
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

/**
 * True when the server at `target` (a URL, or host and port) answers PING: through ioredis when it
 * is installed (TLS, credentials in `extra` or the URL), else over a plain TCP connection (a project
 * with node-redis alone). With `pid`, through ioredis, only when the server answering is that process
 * (`INFO server`'s process_id, where INFO may be run): a port another process took while a killed
 * server was down is not mistaken for the restarted one.
 */
export async function ping(target: string | { host: string; port: number }, extra: Record<string, unknown> = {}, pid?: number): Promise<boolean> {
  let Redis: ReturnType<typeof ioredis>['Redis'];
  try {
    ({ Redis } = ioredis());
  } catch {
    return plainPing(typeof target === 'string' ? { host: new URL(target).hostname, port: Number(new URL(target).port || 6379) } : target);
  }
  const options = { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2000, ...extra };
  const probe = typeof target === 'string' ? new Redis(target, options) : new Redis({ ...target, ...options });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    if ((await probe.ping()) !== 'PONG') return false;
    if (pid === undefined) return true;
    const info = await probe.info('server').catch(() => '');
    const answering = /process_id:(\d+)/.exec(info)?.[1];
    return answering === undefined || Number(answering) === pid;
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

/** PING over a plain TCP connection: true on +PONG within 2 s. */
function plainPing(target: { host: string; port: number }): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(target);
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2_000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => {
      reply += data.toString();
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

/** The server exited before it answered PING (e.g. its port was taken meanwhile). */
class Exited extends Error {}

/** Starts a redis-server on a free port of 127.0.0.1 and resolves once it answers PING. */
export async function startPrivateServer(options: PrivateServerOptions): Promise<PrivateServer> {
  const host = '127.0.0.1';
  const dir = mkdtempSync(join(tmpdir(), 'relock-redis-'));
  let port = await freePort();
  let child: ChildProcess | undefined;
  let stopped = false;

  const kill = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    // Referenced again while it dies: awaiting an unref()'d child's exit must keep Node alive (or a
    // top-level `await stop()` ends the process with code 13).
    running.ref();
    running.kill('SIGKILL');
    await exited;
  };
  const start = async () => {
    const started = spawn(
      'redis-server',
      ['--port', String(port), '--bind', host, '--save', '', '--appendonly', 'no', '--dir', dir, ...(options.args ?? [])],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    child = started;
    track(started);
    // Neither the process nor its pipe keeps Node running: a forgotten stop() ends with the process.
    started.unref();
    (started.stderr as (NodeJS.ReadableStream & { unref?(): void }) | null)?.unref?.();
    // redis-server writes to stderr only when it cannot start (a bad argument): kept for the error.
    let errors = '';
    started.stderr?.setEncoding('utf8');
    started.stderr?.on('data', (chunk: string) => (errors = (errors + chunk).slice(-2000)));
    const failed = new Promise<string>((resolve) => {
      started.once('error', (error) => resolve(error.message));
      started.once('close', (code, signal) => {
        const said = errors.split('\n').map((line) => line.trim()).filter((line) => line && !/^\*+/.test(line)).join(' ');
        resolve(`exited with ${signal ?? `code ${code}`}${said ? `: ${said.slice(0, 500)}` : ''}`);
      });
    });
    let failure: string | undefined;
    void failed.then((reason) => (failure = reason));
    const until = Date.now() + options.timeoutMs;
    while (!(await Promise.race([ping({ host, port: options.readyPort ?? port }, options.connectOptions, started.pid), failed.then(() => false)]))) {
      if (failure !== undefined) throw new Exited(`redis-server on port ${port} ${failure}`);
      if (Date.now() > until) {
        await kill();
        throw new Error(`redis-server on port ${port} did not answer PING within ${options.timeoutMs} ms`);
      }
      await sleep(20);
    }
  };

  for (let attempt = 1; ; attempt++) {
    try {
      await start();
      break;
    } catch (error) {
      // Another process may bind the free port before the server does: then try another port.
      if (error instanceof Exited && attempt < 3 && options.readyPort === undefined) {
        port = await freePort();
        continue;
      }
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }
  return {
    host,
    port,
    url: `redis://${host}:${port}`,
    get pid() {
      return child?.pid;
    },
    kill,
    async restart() {
      if (stopped) throw new Error(`redis-server on port ${port} was stopped: it cannot be restarted`);
      await kill();
      await start();
    },
    async stop() {
      stopped = true;
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
