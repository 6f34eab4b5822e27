// A double-submitted form inserted once. The order form carries a submission id; a user's double
// click sends it twice to one app server, a proxy's retry sends it to another, all at once, and a
// late retry comes a moment later. The handler locks on the submission id: the first request
// inserts the order, the others wait for it, find the order and answer with it.
//
//   node --import tsx examples/form-submit/main.ts            # exits 1 if the order was inserted twice
//   node --import tsx examples/form-submit/main.ts --no-lock  # the same without the lock: it is
//
// Redis: REDIS_URL, else a private redis-server, else Docker (relock/testing's startRedis).
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { LockClient } from 'relock';
import { startRedis } from 'relock/testing';

const useLock = !process.argv.includes('--no-lock');

await using redis = await startRedis();
const db = new Redis(redis.url); // stands for the orders table

/** INSERT unless this submission has an order already; answers with the order's id. */
async function placeOrder(submissionId: string, items: string[]): Promise<string> {
  const existing = await db.hget('orders:by-submission', submissionId); // SELECT id FROM orders WHERE submission_id = $1
  if (existing) return existing;
  await sleep(50); // price the items, charge the card...
  const id = `order-${randomUUID().slice(0, 8)}`;
  await db.hset('orders:by-submission', submissionId, id); // INSERT INTO orders ...
  await db.rpush(`orders:of:${submissionId}`, JSON.stringify({ id, items }));
  return id;
}

/** One app server: POST /orders with {"submissionId", "items"}. */
function appServer(client: LockClient): Server {
  return createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const { submissionId, items } = JSON.parse(body) as { submissionId: string; items: string[] };
    let orderId: string;
    if (useLock) {
      await using lease = await client.lock(`form:${submissionId}`).acquire({ waitMs: 10_000 });
      orderId = await lease.run(() => placeOrder(submissionId, items));
    } else {
      orderId = await placeOrder(submissionId, items);
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ orderId }));
  });
}

const clients = [new LockClient({ redis: redis.url }), new LockClient({ redis: redis.url })];
const servers = clients.map(appServer);
try {
  const urls = await Promise.all(
    servers.map((server) => new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/orders`)))),
  );
  const form = JSON.stringify({ submissionId: randomUUID(), items: ['book', 'lamp'] });
  const post = async (url: string) => ((await (await fetch(url, { method: 'POST', body: form })).json()) as { orderId: string }).orderId;

  const answers = await Promise.all([post(urls[0]!), post(urls[0]!), post(urls[1]!)]); // double click, proxy retry
  await sleep(200);
  answers.push(await post(urls[1]!)); // a late retry
  const { submissionId } = JSON.parse(form) as { submissionId: string };
  const inserted = await db.llen(`orders:of:${submissionId}`);
  console.log(`4 requests for one submission${useLock ? '' : ' (no lock)'}: answered ${answers.join(', ')}; orders inserted: ${inserted}`);
  if (inserted !== 1 || new Set(answers).size !== 1) {
    console.log(`DUPLICATE: ${inserted} orders inserted for one submission`);
    process.exitCode = 1;
  } else {
    console.log('OK: inserted once, every request got the same order');
  }
  await db.del(`orders:of:${submissionId}`);
  await db.hdel('orders:by-submission', submissionId);
} finally {
  for (const server of servers) server.close();
  await Promise.all(clients.map((client) => client.close()));
  db.disconnect();
}
