import * as assert from 'uvu/assert';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { LockClient } from '../../../src/index.ts';
import { freePort, ping } from '../../../src/testing/server.ts';
import { startRedis, type TestRedis } from '../../../src/testing/index.ts';
import { describe, eventually, rejects, uniqueName, within } from '../../helpers/describe.ts';

const child = join(import.meta.dirname, 'child.ts');
const run = promisify(execFile);

/** True while some process's command line is that of a redis-server on this port. */
function serverProcessOn(port: number): boolean {
  return execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
    .split('\n')
    .some((line) => line.startsWith('redis-server') && line.endsWith(`:${port}`));
}

/** Runs fn with REDIS_URL set to url (or unset), restoring it after. */
async function withRedisUrl<T>(url: string | undefined, fn: () => Promise<T>): Promise<T> {
  const saved = process.env.REDIS_URL;
  if (url === undefined) delete process.env.REDIS_URL;
  else process.env.REDIS_URL = url;
  try {
    return await fn();
  } finally {
    if (saved === undefined) delete process.env.REDIS_URL;
    else process.env.REDIS_URL = saved;
  }
}

describe('relock/testing startRedis: a private redis-server', (it) => {
  it('starts one on a free port when REDIS_URL is not set, and relock locks on it', async () => {
    const redis = await withRedisUrl(undefined, () => startRedis());
    try {
      assert.is(redis.source, 'redis-server');
      assert.is(redis.host, '127.0.0.1');
      assert.is(redis.url, `redis://127.0.0.1:${redis.port}`);
      assert.ok(serverProcessOn(redis.port), 'a redis-server process listens on the port');
      const client = new LockClient({ redis: redis.url });
      try {
        const lease = await client.lock(uniqueName()).acquire({ waitMs: 0 });
        assert.ok(lease.fencingToken > 0);
        await lease.release();
      } finally {
        await client.close();
      }
    } finally {
      await redis.stop();
    }
  });

  it('stop() leaves no process behind and frees the port; a second stop() is a no-op', async () => {
    const redis = await startRedis({ sources: ['redis-server'] });
    assert.ok(await ping(redis.url));
    await redis.stop();
    assert.not.ok(serverProcessOn(redis.port), 'no redis-server process is left on the port');
    assert.not.ok(await ping(redis.url), 'the port refuses connections');
    await redis.stop();
  });

  it('stops at the end of an `await using` block', async () => {
    let port = 0;
    {
      await using redis = await startRedis({ sources: ['redis-server'] });
      port = redis.port;
      assert.ok(serverProcessOn(port));
    }
    assert.not.ok(serverProcessOn(port));
  });

  it('passes args to the server', async () => {
    await using redis = await startRedis({ sources: ['redis-server'], args: ['--maxmemory-policy', 'allkeys-lru'] });
    const connection = new Redis(redis.url);
    try {
      assert.equal(await connection.config('GET', 'maxmemory-policy'), ['maxmemory-policy', 'allkeys-lru']);
    } finally {
      connection.disconnect();
    }
  });

  it('rejects, saying so, when the server exits before it answers', async () => {
    const error = await rejects(startRedis({ sources: ['redis-server'], args: ['--no-such-option', 'x'] }));
    assert.match(error.message, /^redis-server on port \d+ exited with code 1: .*'no-such-option "x"'.*Bad directive/);
  });

  it('neither keeps the process alive nor outlives it when stop() is forgotten', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', child, 'exit'], { timeout: 15_000 });
    const port = Number(stdout.trim());
    assert.ok(port > 0, `the child printed its server's port: ${stdout}`);
    await eventually(() => !serverProcessOn(port), `the redis-server on ${port} is gone with its parent`);
  });

  // Issue 31, point 6: a runner's timeout or a CI cancel sends SIGTERM; without a listener Node ends
  // before any 'exit' listener runs, and the redis-server outlived it.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    it(`kills its redis-server when ${signal} ends the process, and the process still ends by ${signal}`, async () => {
      const { port, ended } = await hanging('hang');
      process.kill(hangingPid, signal);
      const { code, signal: endedBy } = await ended;
      assert.is(endedBy, signal, `the child ended by ${signal} (exit code ${code}), as it would without relock/testing`);
      await eventually(() => !serverProcessOn(port), `the redis-server on ${port} is gone with its parent`);
    });
  }

  it("kills its redis-server on SIGTERM and leaves the exit to the process's own SIGTERM listener", async () => {
    const { port, ended, output } = await hanging('hang-graceful');
    process.kill(hangingPid, 'SIGTERM');
    const { code, signal } = await ended;
    assert.is(code, 0, `the child's own listener decided the exit (signal ${signal})`);
    assert.match(output(), /graceful/);
    await eventually(() => !serverProcessOn(port), `the redis-server on ${port} is gone with its parent`);
  });
});

let hangingPid = 0;

/** A child that started a private redis-server and stays up: its server's port, and its end. */
async function hanging(mode: 'hang' | 'hang-graceful') {
  const started = spawn(process.execPath, ['--import', 'tsx', child, mode], { stdio: ['ignore', 'pipe', 'inherit'] });
  hangingPid = started.pid!;
  let out = '';
  started.stdout.setEncoding('utf8');
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => started.once('close', (code, signal) => resolve({ code, signal })));
  const port = await within(
    new Promise<number>((resolve, reject) => {
      started.stdout.on('data', (chunk: string) => {
        out += chunk;
        const line = /^(\d+)$/m.exec(out);
        if (line) resolve(Number(line[1]));
      });
      void ended.then(() => reject(new Error(`the child ended before printing its port: ${out}`)));
    }),
    15_000,
    'the child printing its port',
  );
  assert.ok(serverProcessOn(port), `a redis-server runs on ${port}`);
  return { port, ended: within(ended, 10_000, 'the child ending'), output: () => out };
}

describe('relock/testing startRedis: REDIS_URL', (it) => {
  let shared: TestRedis;
  it.before(async () => {
    shared = await startRedis({ sources: ['redis-server'] });
  });
  it.after(() => shared.stop());

  it('uses the server REDIS_URL names, and stop() leaves it running', async () => {
    const redis = await withRedisUrl(shared.url, () => startRedis());
    assert.is(redis.source, 'REDIS_URL');
    assert.is(redis.url, shared.url);
    assert.is(redis.port, shared.port);
    await redis.stop();
    assert.ok(await ping(shared.url), 'the REDIS_URL server still answers');
  });

  it('rejects, naming it, when REDIS_URL does not answer, rather than starting another', async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const error = await withRedisUrl(url, () => rejects(startRedis()));
    assert.match(error.message, `REDIS_URL=${url} does not answer PING`);
  });

  it('skips REDIS_URL when sources leave it out', async () => {
    await using redis = await withRedisUrl(shared.url, () => startRedis({ sources: ['redis-server'] }));
    assert.is(redis.source, 'redis-server');
    assert.is.not(redis.port, shared.port);
  });
});

describe('relock/testing startRedis: nothing available', (it) => {
  it('rejects with an error naming all three sources and how to provide each', async () => {
    // No REDIS_URL, a PATH without redis-server, and a Docker host that does not answer.
    const empty = mkdtempSync(join(tmpdir(), 'relock-no-path-'));
    try {
      const env: NodeJS.ProcessEnv = { PATH: empty, HOME: empty, DOCKER_HOST: `tcp://127.0.0.1:${await freePort()}` };
      const failed = await rejects(run(process.execPath, ['--import', 'tsx', child, 'find'], { env, cwd: join(import.meta.dirname, '..', '..', '..'), timeout: 30_000 }));
      const message = String(failed.stderr);
      assert.is(failed.code, 1, message);
      assert.match(message, 'No Redis for the tests: REDIS_URL is not set; redis-server is not on the PATH');
      assert.match(message, 'testcontainers: no Docker engine answered');
      assert.match(message, 'set REDIS_URL=redis://host:port, or put redis-server on the PATH');
      assert.match(message, 'install testcontainers (npm i -D testcontainers) and start a Docker engine');
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  }, 40_000);

  it('names only the sources it was asked to try', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'relock-no-path-'));
    const saved = process.env.PATH;
    process.env.PATH = empty;
    try {
      const error = await rejects(startRedis({ sources: ['redis-server'] }));
      assert.is(error.message, 'No Redis for the tests: redis-server is not on the PATH (install Redis (apt-get install redis-server, brew install redis)). To provide one: put redis-server on the PATH (install Redis (apt-get install redis-server, brew install redis)).');
    } finally {
      process.env.PATH = saved;
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('relock/testing startRedis: bad options', (it) => {
  it('throws TypeError or RangeError naming the option, before starting anything', async () => {
    const cases: [unknown, typeof TypeError, RegExp][] = [
      ['redis', TypeError, /`startRedis options` to be an object/],
      [{ port: 1 }, TypeError, /Unknown option `port`/],
      [{ sources: 'redis-server' }, TypeError, /`sources` to be an array of 'REDIS_URL', 'redis-server', 'testcontainers'/],
      [{ sources: ['docker'] }, TypeError, /`sources`.*"docker"/],
      [{ sources: [] }, RangeError, /`sources` to name at least one source/],
      [{ args: ['--port', 1] }, TypeError, /`args` to be an array of strings/],
      [{ image: '' }, TypeError, /`image` to be a non-empty string/],
      [{ timeoutMs: 0 }, RangeError, /`timeoutMs`/],
      [{ timeoutMs: '1000' }, TypeError, /`timeoutMs`/],
    ];
    for (const [options, ErrorClass, message] of cases) {
      const error = await rejects(startRedis(options as never));
      assert.instance(error, ErrorClass, `${JSON.stringify(options)}: ${error}`);
      assert.match(error.message, message);
    }
  });
});
