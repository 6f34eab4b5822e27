// A flash sale: 50 buyers at once on five app servers, 10 items in stock, never oversold.
//
// Buying takes several steps (read the stock, reserve the payment, write the stock and the order),
// so one lock per SKU runs them one buyer at a time; other SKUs would sell in parallel. Each app
// server is a LockClient, as each server process would have one.
//
//   node --import tsx examples/flash-sale/main.ts            # prints the outcome, exits 1 if oversold
//   node --import tsx examples/flash-sale/main.ts --no-lock  # the same without the lock: oversells
//
// Redis: REDIS_URL, else a private redis-server, else Docker (relock/testing's startRedis).
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { LockClient, LockTimeoutError } from 'relock';
import { startRedis } from 'relock/testing';

const STOCK = 10;
const BUYERS = 50;
const SERVERS = 5;
const useLock = !process.argv.includes('--no-lock');

await using redis = await startRedis();
const db = new Redis(redis.url); // stands for the shop's database
const servers = Array.from({ length: SERVERS }, () => new LockClient({ redis: redis.url }));
const sku = `sku-${randomUUID()}`;

/** The steps of one purchase: correct only when no other buyer of this SKU runs them meanwhile. */
async function purchase(buyer: string): Promise<'bought' | 'sold out'> {
  const quantity = Number(await db.get(`stock:${sku}`));
  if (quantity < 1) return 'sold out';
  await sleep(5); // reserve the payment with the payment provider
  await db.set(`stock:${sku}`, quantity - 1);
  await db.rpush(`orders:${sku}`, buyer);
  return 'bought';
}

async function buy(client: LockClient, buyer: string): Promise<string> {
  if (!useLock) return purchase(buyer);
  try {
    return await client.lock(`stock:${sku}`).runExclusive(() => purchase(buyer), { waitMs: 30_000 });
  } catch (error) {
    if (error instanceof LockTimeoutError) return 'busy, try again';
    throw error;
  }
}

try {
  await db.set(`stock:${sku}`, STOCK);
  const outcomes = await Promise.all(Array.from({ length: BUYERS }, (_, i) => buy(servers[i % SERVERS]!, `buyer-${i + 1}`)));
  const count = (outcome: string) => outcomes.filter((o) => o === outcome).length;
  const [left, orders] = [Number(await db.get(`stock:${sku}`)), await db.llen(`orders:${sku}`)];
  console.log(`${BUYERS} buyers on ${SERVERS} servers${useLock ? '' : ' (no lock)'}, ${STOCK} in stock: ${count('bought')} bought, ${count('sold out')} sold out, ${count('busy, try again')} busy`);
  console.log(`stock left ${left}, orders written ${orders}`);
  if (orders > STOCK || left < 0 || orders + left !== STOCK) {
    console.log(`OVERSOLD: ${orders} orders for ${STOCK} items`);
    process.exitCode = 1;
  } else {
    console.log('OK: never oversold');
  }
  await db.del(`stock:${sku}`, `orders:${sku}`);
} finally {
  await Promise.all(servers.map((client) => client.close()));
  db.disconnect();
}
