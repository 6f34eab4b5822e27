// npm run demo: three worker processes contend for one lock, nest it, and print who holds it with
// which fencing token. Redis is found as the tests find it (REDIS_URL, redis-server, or Docker).
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { LockClient } from '../src/index.ts';
import { startRedis } from '../test/helpers/redis.ts';

const WORKERS = 3;
const ROUNDS = 3;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function worker(url: string, id: string): Promise<void> {
  const client = new LockClient({ redis: url, leaseMs: 5_000 });
  const order = client.lock('demo:order:42');
  const tokens: number[] = [];

  // A helper that locks the same order itself: inside a holder's context it re-enters.
  const addLine = (item: string) =>
    order.runExclusive(async (lease) => {
      console.log(`  worker ${id}   nested: "${item}" holdCount=${lease.holdCount} token=${lease.fencingToken}`);
      await sleep(20);
    });

  for (let round = 1; round <= ROUNDS; round++) {
    await order.runExclusive(async (lease) => {
      tokens.push(lease.fencingToken);
      console.log(`worker ${id} holds demo:order:42 (round ${round}) holdCount=${lease.holdCount} token=${lease.fencingToken}`);
      await addLine(`item ${round}`);
      await sleep(50);
      console.log(`worker ${id} releases`);
    });
    await sleep(Math.random() * 30);
  }
  process.send?.(tokens);
  await client.close();
}

async function main(): Promise<void> {
  const server = await startRedis();
  console.log(`Redis: ${server.url}${server.private ? ' (a private redis-server for this demo)' : ''}\n`);
  const file = fileURLToPath(import.meta.url);
  const tokens: number[] = [];
  try {
    await Promise.all(
      Array.from({ length: WORKERS }, (_, i) => {
        const child = fork(file, ['worker', server.url, String(i + 1)], { execArgv: ['--import', 'tsx'] });
        child.on('message', (message) => tokens.push(...(message as number[])));
        return new Promise<void>((resolve, reject) =>
          child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`worker ${i + 1} exited with ${code}`)))),
        );
      }),
    );
  } finally {
    await server.stop();
  }
  const sorted = [...tokens].sort((a, b) => a - b);
  const unique = new Set(tokens).size === tokens.length;
  console.log(`\n${tokens.length} holds by ${WORKERS} processes, every fencing token unique: ${unique}; first ${sorted[0]}, last ${sorted.at(-1)}`);
  if (!unique || tokens.length !== WORKERS * ROUNDS) process.exitCode = 1;
}

if (process.argv[2] === 'worker') await worker(process.argv[3]!, process.argv[4]!);
else await main();
