// Fastify: a route that locks with a finite waitMs, the LockClient closed by the server's onClose
// hook, and ERR_LOCK_TIMEOUT mapped to 503 in the error handler (docs/frameworks.md#fastify).
// Twenty requests at once each add 1 to a stock count that is read, changed and written back
// (a read-modify-write); under the lock none of them is lost.
//
//   node --import tsx examples/fastify/main.ts            # exits 1 if an update was lost
//   node --import tsx examples/fastify/main.ts --no-lock  # the same without the lock: some are
//
// Redis: REDIS_URL, else a private redis-server, else Docker (relock/testing's startRedis).
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import { LockClient, LockError } from 'relock';
import { startRedis } from 'relock/testing';

const useLock = !process.argv.includes('--no-lock');
await using redis = await startRedis();
const db = new Redis(redis.url); // stands for the stock table
const sku = `sku-${process.pid}`;
await db.set(`stock:${sku}`, 0);

const app = Fastify();
const locks = new LockClient({ redis: redis.url });
app.addHook('onClose', () => locks.close());
app.setErrorHandler((error, _request, reply) => {
  if (error instanceof LockError && error.code === 'ERR_LOCK_TIMEOUT') return reply.code(503).header('retry-after', '1').send({ error: 'busy' });
  return reply.send(error);
});

/** Reads the count, works a little, writes it back: two at once would lose one. */
async function restock(id: string): Promise<number> {
  const count = Number(await db.get(`stock:${id}`));
  await sleep(5);
  await db.set(`stock:${id}`, count + 1);
  return count + 1;
}

app.post<{ Params: { id: string } }>('/stock/:id/restock', async (request) => {
  const { id } = request.params;
  // A request handler waits a bounded time: 20 requests of ~10 ms each fit in 5 s with room to spare.
  const count = useLock ? await locks.lock(`stock:${id}`).runExclusive(() => restock(id), { waitMs: 5_000 }) : await restock(id);
  return { count };
});

await app.listen({ port: 0, host: '127.0.0.1' });
try {
  const { port } = app.server.address() as { port: number };
  const statuses = await Promise.all(Array.from({ length: 20 }, async () => (await fetch(`http://127.0.0.1:${port}/stock/${sku}/restock`, { method: 'POST' })).status));
  const count = Number(await db.get(`stock:${sku}`));
  console.log(`20 restocks${useLock ? '' : ' (no lock)'}: ${statuses.filter((status) => status === 200).length} answered 200; stock ${count}`);
  if (count !== 20) {
    console.log(`LOST UPDATES: stock ${count}, expected 20`);
    process.exitCode = 1;
  } else {
    console.log('OK: every restock counted');
  }
} finally {
  await app.close(); // closes the LockClient too (onClose)
  await db.del(`stock:${sku}`);
  db.disconnect();
}
