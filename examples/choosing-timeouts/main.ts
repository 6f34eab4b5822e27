// Choosing leaseMs and waitMs (docs/choosing-timeouts.md), each choice shown with what it does:
//   1. a request handler gives acquire() a waitMs (or uses tryAcquire()): a busy lock is an answer,
//      not a request that hangs;
//   2. a job longer than the lease keeps its lock: the watchdog renews it (no leaseMs given);
//   3. a fixed leaseMs ends the hold by itself, released or not, and the holder's signal says so.
//
//   node --import tsx examples/choosing-timeouts/main.ts   # exits 1 if any of the three went otherwise
//
// Redis: REDIS_URL, else a private redis-server, else Docker (relock/testing's startRedis).
import { setTimeout as sleep } from 'node:timers/promises';
import { LockClient, LockError, LockLostError } from 'relock';
import { startRedis } from 'relock/testing';

await using redis = await startRedis();
// Two app instances; a 1 s watchdog lease so that case 2 outlives it quickly (the default is 30 s).
const one = new LockClient({ redis: redis.url, leaseMs: 1_000 });
const two = new LockClient({ redis: redis.url, leaseMs: 1_000 });
const wrong: string[] = [];
try {
  // 1. A handler's wait is bounded: another instance holds the lock for the whole test.
  const held = await two.lock('cart:7').acquire();
  const timeout = await one.lock('cart:7').acquire({ waitMs: 200 }).then(
    () => undefined,
    (error: unknown) => error,
  );
  const answer = timeout instanceof LockError && timeout.code === 'ERR_LOCK_TIMEOUT' ? 'busy (ERR_LOCK_TIMEOUT): answer 409/503' : `unexpected ${String(timeout)}`;
  console.log(`1. acquire({ waitMs: 200 }) on a held lock: ${answer}; tryAcquire(): ${await one.lock('cart:7').tryAcquire()}`);
  if (!answer.startsWith('busy')) wrong.push('the bounded wait');
  await held.release();

  // 2. The watchdog: a 2.5 s job under a 1 s lease, renewed every ~333 ms while it runs.
  await one.lock('import:nightly').runExclusive(async (lease) => {
    await sleep(2_500);
    const others = await two.lock('import:nightly').tryAcquire();
    console.log(`2. a 2.5 s job with a 1 s watchdog lease: still held (${others === null ? 'another instance is refused' : 'ANOTHER INSTANCE GOT IT'}), signal aborted: ${lease.signal.aborted}`);
    if (others !== null || lease.signal.aborted) wrong.push('the watchdog');
    await others?.release();
  });

  // 3. A fixed lease ends by itself: the holder never releases, its signal reports the end, and
  // another instance's acquire gets the lock once the lease is over.
  const fixed = await one.lock('report:2026-12-07').acquire({ leaseMs: 500 });
  const next = await two.lock('report:2026-12-07').acquire({ waitMs: 10_000 });
  const reason: unknown = fixed.signal.reason;
  console.log(`3. a fixed 500 ms lease, never released: another instance got the lock; the holder's signal aborted: ${fixed.signal.aborted} (${reason instanceof LockLostError ? reason.code : String(reason)})`);
  if (!fixed.signal.aborted || !(reason instanceof LockLostError)) wrong.push('the fixed lease');
  await next.release();
} finally {
  await Promise.all([one.close(), two.close()]);
}
if (wrong.length > 0) {
  console.log(`WRONG: ${wrong.join(', ')}`);
  process.exitCode = 1;
} else {
  console.log('OK: a bounded wait, a renewed lease, a fixed lease that ended');
}
