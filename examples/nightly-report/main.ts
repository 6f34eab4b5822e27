// A nightly job fired on every node, run by one: three node processes whose schedulers fire the
// same report; one builds it, the others skip it at once. The third node's trigger fires late,
// after the report is done: the fixed lease, never released, keeps it from running the job again.
// (cron.sh next to this file does the same from the shell, with the relock command.)
//
//   node --import tsx examples/nightly-report/main.ts   # exits 1 unless exactly one node ran it
//
// Redis: REDIS_URL, else a private redis-server, else Docker (relock/testing's startRedis).
import { fork } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { LockClient } from 'relock';
import { startRedis } from 'relock/testing';

/** One node: what its scheduler runs at 03:00 (`fire` names that night's run on every node). */
async function node(id: string, url: string, fire: string, lateMs: number): Promise<void> {
  const client = new LockClient({ redis: url });
  const db = new Redis(url);
  try {
    await sleep(lateMs); // when this node's trigger fires
    const lease = await client.lock(`job:nightly-report:${fire}`).tryAcquire({ leaseMs: 60_000 }); // 2 hours in production
    if (lease === null) {
      console.log(`node ${id}: another node has the report, skipping`);
      return;
    }
    console.log(`node ${id}: building the report (fencing token ${lease.fencingToken})`);
    await sleep(300); // buildNightlyReport({ signal: lease.signal })
    await db.incr(`report:runs:${fire}`);
    console.log(`node ${id}: report done`);
    // No release: the lock stays taken for the whole lease, so a node that fires late skips too.
  } finally {
    await client.close();
    db.disconnect();
  }
}

/** The demo: three nodes on one Redis, the third firing a second late. */
async function main(): Promise<void> {
  await using redis = await startRedis();
  const fire = new Date().toISOString(); // the scheduled time, the same on every node
  const file = fileURLToPath(import.meta.url);
  await Promise.all(
    [0, 0, 1_000].map(
      (lateMs, i) =>
        new Promise<void>((resolve, reject) =>
          fork(file, ['node', String(i + 1), redis.url, fire, String(lateMs)]).once('exit', (code) =>
            code === 0 ? resolve() : reject(new Error(`node ${i + 1} exited with code ${code}`)),
          ),
        ),
    ),
  );
  const db = new Redis(redis.url);
  const runs = Number(await db.get(`report:runs:${fire}`));
  db.disconnect();
  console.log(runs === 1 ? 'OK: one node of three built the report' : `WRONG: the report was built ${runs} times`);
  if (runs !== 1) process.exitCode = 1;
}

const [role, id, url, fire, lateMs] = process.argv.slice(2);
if (role === 'node') await node(id!, url!, fire!, Number(lateMs));
else await main();
