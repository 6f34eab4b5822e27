// The runtime-neutral smoke of the runtime matrix (test/runtimes.ts): plain node:assert over the
// built package (dist/index.mjs) and ioredis, so that it runs unchanged on Node, Bun and Deno, which
// the uvu runner (tsx, workers) may not. Against a private redis-server on a free port (the PATH's):
// every kind acquired and released across two clients, a wake-up across processes (a child of the
// same runtime holds the lock and releases it), re-entry per async context, a lease lost when its
// key is deleted, `await using`, the diagnostics_channel tracing channels, Bun.RedisClient refused on
// Bun, and close() leaving nothing running: the process must end by itself (test/runtimes.ts waits).
// Usage: <runtime> test/runtimes/smoke.mjs   (Deno: deno run -A test/runtimes/smoke.mjs)
// Closes with "N passed, N failed". With --hold <url> <name> it is the child: holds, then releases.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { tracingChannel } from 'node:diagnostics_channel';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { LockClient, LockError, LockLostError } from '../../dist/index.mjs';

const runtime = typeof Bun !== 'undefined' ? 'bun' : typeof Deno !== 'undefined' ? 'deno' : 'node';
const self = fileURLToPath(import.meta.url);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** The same runtime running this file with `args`. */
const child = (args) => spawn(process.execPath, [...(runtime === 'deno' ? ['run', '-A'] : []), self, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });

if (process.argv[2] === '--hold') {
  // The child: holds the lock until its parent says (a line on stdout, then 300 ms), then releases.
  const [url, name] = process.argv.slice(3);
  const client = new LockClient({ redis: url });
  const lease = await client.lock(name).acquire();
  console.log('held');
  await sleep(300);
  await lease.release();
  await client.close();
} else {
  await main();
}

async function main() {
  const port = await new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  const admin = new Redis(url, { lazyConnect: true });
  admin.on('error', () => undefined); // refused until the server listens
  for (let tries = 0; ; tries++) {
    try {
      await admin.connect();
      break;
    } catch (error) {
      if (tries > 100) throw error;
      admin.disconnect();
      await sleep(100);
    }
  }
  const a = new LockClient({ redis: url });
  const b = new LockClient({ redis: url });
  const counts = { passed: 0, failed: 0 };
  const check = async (name, body) => {
    try {
      let timer;
      const limit = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('not settled within 20 s')), 20_000)));
      await Promise.race([body(), limit]).finally(() => clearTimeout(timer));
      counts.passed++;
      console.log(`  ok   ${name}`);
    } catch (error) {
      counts.failed++;
      console.log(`  FAIL ${name}: ${error?.stack ?? error}`);
    }
  };
  const unique = (label) => `${label}:${runtime}:${Math.random().toString(36).slice(2)}`;
  console.log(`relock smoke on ${runtime} ${runtime === 'bun' ? Bun.version : runtime === 'deno' ? Deno.version.deno : process.version}, redis-server on ${port}`);

  const kinds = {
    lock: (c, n) => c.lock(n),
    fairLock: (c, n) => c.fairLock(n),
    'readWriteLock().writeLock()': (c, n) => c.readWriteLock(n).writeLock(),
    'semaphore(1)': (c, n) => c.semaphore(n, { permits: 1 }),
    'multiLock(2)': (c, n) => c.multiLock([c.lock(`${n}:1`), c.lock(`${n}:2`)]),
  };
  for (const [kind, make] of Object.entries(kinds)) {
    await check(`${kind}: held by one client, refused to another, then theirs`, async () => {
      const name = unique(kind);
      const lease = await make(a, name).acquire();
      assert.equal(await make(b, name).tryAcquire(), null, 'the other client is refused while it is held');
      await lease.release();
      const next = await make(b, name).tryAcquire();
      assert.ok(next, 'the other client gets it after the release');
      await next.release();
    });
  }
  await check('readWriteLock: readers share, a writer waits for them', async () => {
    const name = unique('rw');
    const [r1, r2] = [await a.readWriteLock(name).readLock().acquire(), await b.readWriteLock(name).readLock().acquire()];
    assert.equal(await b.readWriteLock(name).writeLock().tryAcquire(), null);
    await r1.release();
    await r2.release();
    await (await b.readWriteLock(name).writeLock().acquire({ waitMs: 5_000 })).release();
  });
  await check('countDownLatch: wait() is woken by the last countDown()', async () => {
    const name = unique('latch');
    assert.equal(await a.countDownLatch(name).trySetCount(2), true);
    const opened = b.countDownLatch(name).wait({ waitMs: 10_000 });
    await a.countDownLatch(name).countDown();
    await a.countDownLatch(name).countDown();
    await opened;
    assert.equal(await b.countDownLatch(name).count(), 0);
  });
  await check('a wake-up across processes: a waiter gets the lock the child process releases', async () => {
    const name = unique('wake');
    const holder = child(['--hold', url, name]);
    const exited = new Promise((resolve) => holder.on('exit', resolve));
    await new Promise((resolve, reject) => {
      holder.stdout.on('data', (data) => String(data).includes('held') && resolve());
      holder.on('exit', (code) => reject(new Error(`the child ended (${code}) before holding`)));
    });
    // The child's lease is the 30 s watchdog lease: only its release (a wake-up) lets this in within 10 s.
    const lease = await a.lock(name).acquire({ waitMs: 10_000 });
    await lease.release();
    assert.equal(await exited, 0, 'the child process ended by itself after close()');
  });
  await check('re-entry per async context: nested in run(), refused outside it', async () => {
    const lock = a.lock(unique('reentry'));
    const lease = await lock.acquire();
    await lease.run(async () => {
      await sleep(1);
      const nested = await lock.acquire({ waitMs: 0 });
      assert.equal(nested.fencingToken, lease.fencingToken, 'the nested acquire is the same hold');
      await nested.release();
    });
    const outside = await Promise.resolve().then(() => lock.tryAcquire());
    assert.equal(outside, null, 'another async context of the same client is refused');
    await lease.release();
  });
  await check('a lease lost: its signal aborts with LockLostError when the key is deleted', async () => {
    const client = new LockClient({ redis: url, leaseMs: 300 });
    const name = unique('lost');
    const lease = await client.lock(name).acquire();
    const aborted = new Promise((resolve) => lease.signal.addEventListener('abort', () => resolve(lease.signal.reason), { once: true }));
    for (const key of await admin.keys(`relock:*${name}*`)) await admin.del(key);
    const reason = await aborted;
    assert.ok(reason instanceof LockLostError, `reason: ${reason}`);
    assert.equal(reason.code, 'ERR_LOCK_LOST');
    await client.close();
  });
  await check('await using releases at the end of the block', async () => {
    const name = unique('using');
    let usingSyntax = true;
    try {
      new Function('return async (l) => { await using held = await l.acquire(); }');
    } catch {
      usingSyntax = false; // Node 20 and 22: no `await using` syntax; the dispose method it calls is there
    }
    if (usingSyntax) {
      await new Function('l', 'return (async () => { await using held = await l.acquire(); })()')(a.lock(name));
    } else {
      const lease = await a.lock(name).acquire();
      await lease[Symbol.asyncDispose]();
    }
    const after = await b.lock(name).tryAcquire();
    assert.ok(after, `free after the block (${usingSyntax ? 'await using' : 'Symbol.asyncDispose called'})`);
    await after.release();
  });
  await check("diagnostics_channel: tracingChannel('relock:acquire') sees start and end", async () => {
    const seen = [];
    const handlers = { start: () => seen.push('start'), end: () => seen.push('end'), asyncStart: () => seen.push('asyncStart'), asyncEnd: () => seen.push('asyncEnd'), error: () => seen.push('error') };
    tracingChannel('relock:acquire').subscribe(handlers);
    try {
      await (await a.lock(unique('traced')).acquire()).release();
    } finally {
      tracingChannel('relock:acquire').unsubscribe(handlers);
    }
    assert.ok(seen.includes('start') && seen.includes('asyncEnd'), `events: ${seen.join(', ')}`);
  });
  await check('bad input is a TypeError before any I/O', async () => {
    assert.throws(() => a.lock(42), TypeError);
    assert.throws(() => a.lock(''), RangeError);
    assert.throws(() => new LockClient({ redis: 42 }), TypeError);
  });
  if (runtime === 'bun') {
    await check('Bun.RedisClient is refused with a TypeError naming it', async () => {
      const bunClient = new Bun.RedisClient(url);
      try {
        assert.throws(() => new LockClient({ redis: bunClient }), (error) => error instanceof TypeError && /Bun\.RedisClient/.test(error.message) && /subscrib/.test(error.message));
      } finally {
        bunClient.close();
      }
    });
  }
  await check('a LockError carries its code', async () => {
    const name = unique('timeout');
    const lease = await a.lock(name).acquire();
    const error = await b.lock(name).acquire({ waitMs: 50 }).catch((e) => e);
    assert.ok(error instanceof LockError && error.code === 'ERR_LOCK_TIMEOUT', String(error));
    await lease.release();
  });

  await a.close();
  await b.close();
  admin.disconnect();
  server.kill('SIGKILL');
  if (process.env.SMOKE_DEBUG) setTimeout(() => { console.log('resources', process.getActiveResourcesInfo().join(' ')); }, 1000).unref();
  console.log(`${runtime}: ${counts.passed} passed, ${counts.failed} failed`);
  if (counts.failed > 0) process.exitCode = 1;
}
