// Migrating from redlock (v5 betas' `using`) and redis-semaphore (Mutex, onLockLost, Semaphore):
// the relock side of docs/migrating.md, run. Each part loses its lock on purpose (another instance
// force-unlocks it, as an expiry would) to show where relock reports the loss.
//
//   node --import tsx examples/migrating/main.ts   # exits 1 if a loss went unreported
//
// Redis: REDIS_URL, else a private redis-server, else Docker (relock/testing's startRedis).
import { setTimeout as sleep } from 'node:timers/promises';
import { LockClient, LockLostError } from 'relock';
import { startRedis } from 'relock/testing';

await using redis = await startRedis();
// A 3 s watchdog lease: renewed each second, so a loss is found within a second even unannounced.
const client = new LockClient({ redis: redis.url, leaseMs: 3_000 });
const admin = new LockClient({ redis: redis.url }); // another instance, or an operator
const wrong: string[] = [];
try {
  // redlock v5 beta:  await redlock.using(['a', 'b'], 5000, async (signal) => { ...; if (signal.aborted) throw signal.error; })
  const both = client.multiLock([client.lock('account:a'), client.lock('account:b')]);
  const using = await both
    .runExclusive(async (lease) => {
      for (let step = 0; step < 500; step++) {
        lease.signal.throwIfAborted(); // redlock's `if (signal.aborted) throw signal.error`
        if (step === 2) await admin.lock('account:b').forceUnlock();
        await sleep(20);
      }
      return 'finished';
    })
    .catch((error: unknown) => error);
  console.log(`using -> multiLock().runExclusive: ${using instanceof LockLostError ? `stopped: ${using.code} (${using.message})` : String(using)}`);
  if (!(using instanceof LockLostError)) wrong.push('runExclusive did not report the loss');

  // redis-semaphore: new Mutex(redis, 'job', { acquireTimeout: 2000, onLockLost }); await mutex.acquire(); ... await mutex.release();
  let lost: unknown;
  const lease = await client.lock('job').acquire({ waitMs: 2_000 });
  lease.signal.addEventListener('abort', () => (lost = lease.signal.reason), { once: true }); // onLockLost
  try {
    await admin.lock('job').forceUnlock();
    for (let tries = 0; lost === undefined && tries < 500; tries++) await sleep(20); // the watchdog's next renewal finds it gone
  } finally {
    await lease.release().catch((error: unknown) => console.log(`release after the loss: ${(error as { code?: string }).code}`));
  }
  console.log(`Mutex onLockLost -> lease.signal 'abort': ${lost instanceof LockLostError ? lost.code : String(lost)}`);
  if (!(lost instanceof LockLostError)) wrong.push('the abort listener did not hear the loss');

  // redis-semaphore: new Semaphore(redis, 'pdf', 3)  ->  client.semaphore('pdf', { permits: 3 })
  const renderers = client.semaphore('pdf', { permits: 3 });
  const leases = await Promise.all([1, 2, 3].map(() => renderers.acquire()));
  const fourth = await renderers.tryAcquire();
  console.log(`Semaphore(limit 3) -> semaphore({ permits: 3 }): 3 held, a 4th tryAcquire(): ${fourth}`);
  if (fourth !== null) wrong.push('a 4th permit');
  await Promise.all(leases.map((held) => held.release()));
} finally {
  await Promise.all([client.close(), admin.close()]);
}
if (wrong.length > 0) {
  console.log(`WRONG: ${wrong.join('; ')}`);
  process.exitCode = 1;
} else {
  console.log('OK: each loss reported where the old library reported it');
}
