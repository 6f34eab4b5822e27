// Express, and the duplicate submit held off by a fixed lease (docs/frameworks.md#express,
// docs/choosing-timeouts.md#a-fixed-lease-as-a-duplicate-guard). A checkout button clicked five
// times sends five POSTs with one idempotency key at once: the first takes `submit:<key>` with a
// fixed 10 s lease and never releases it, so every duplicate within those 10 s gets 409 at once
// (tryAcquire, no waiting) and the card is charged once. A LockTimeoutError from any other route
// becomes a 503 in the error middleware.
//
//   node --import tsx examples/express/main.ts            # exits 1 if the card was charged twice
//   node --import tsx examples/express/main.ts --no-lock  # the same without the lock: it is
//
// Redis: REDIS_URL, else a private redis-server, else Docker (relock/testing's startRedis).
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import express, { type NextFunction, type Request, type Response } from 'express';
import { LockClient, LockError } from 'relock';
import { startRedis } from 'relock/testing';

const useLock = !process.argv.includes('--no-lock');
await using redis = await startRedis();
const locks = new LockClient({ redis: redis.url });
const charges: string[] = []; // stands for the payment provider

const app = express();
app.post('/checkout', async (req: Request, res: Response) => {
  const key = req.get('idempotency-key') ?? '';
  // A fixed lease, never released: the key stays taken for 10 s whatever happens to this process.
  const lease = useLock ? await locks.lock(`submit:${key}`).tryAcquire({ leaseMs: 10_000 }) : true;
  if (lease === null) {
    res.status(409).json({ error: 'already submitted' });
    return;
  }
  await sleep(50); // charge the card
  charges.push(key);
  res.status(201).json({ charged: true });
});
// Express 5 passes a rejected handler's error here: a lock that stayed busy is a 503 to retry.
app.use((error: unknown, _req: Request, res: Response, next: NextFunction) => {
  if (error instanceof LockError && error.code === 'ERR_LOCK_TIMEOUT') res.status(503).set('retry-after', '1').json({ error: 'busy' });
  else next(error);
});

const server = app.listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
try {
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/checkout`;
  const key = randomUUID();
  const statuses = await Promise.all(Array.from({ length: 5 }, async () => (await fetch(url, { method: 'POST', headers: { 'idempotency-key': key } })).status));
  console.log(`5 clicks${useLock ? '' : ' (no lock)'}: statuses ${statuses.sort().join(', ')}; charges: ${charges.length}`);
  if (charges.length !== 1 || statuses.filter((status) => status === 409).length !== 4) {
    console.log(`CHARGED ${charges.length} TIMES for one checkout`);
    process.exitCode = 1;
  } else {
    console.log('OK: charged once, four duplicates refused with 409');
  }
} finally {
  server.close();
  await locks.close();
}
