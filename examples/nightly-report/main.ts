// A nightly job fired on every node, run by one: three node processes schedule the same report with
// node-cron (`distributed: true`), and relock/node-cron's coordinator lets one node run each fire;
// the others skip it at once. For the demo the schedule fires every second for a few seconds (in
// production: '0 3 * * *'). `--no-lock` gives node-cron a coordinator that lets every node run: each
// fire is then built three times. (cron.sh next to this file does the same from the shell, with the
// relock command.)
//
//   node --import tsx examples/nightly-report/main.ts [--no-lock]   # exits 1 unless each fire ran once
//
// Redis: REDIS_URL, else a private redis-server, else Docker (relock/testing's startRedis).
import { fork } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import cron from 'node-cron';
import { Redis } from 'ioredis';
import { LockClient } from 'relock';
import { runCoordinator } from 'relock/node-cron';
import { startRedis } from 'relock/testing';

/** The fires judged: every node has scheduled the task a second before the first of them. */
const FIRES = 2;

/** One node: schedules the report from `startAt` for FIRES seconds, then stops. */
async function node(id: string, url: string, startAt: number, noLock: boolean): Promise<void> {
  const client = new LockClient({ redis: url });
  const db = new Redis(url);
  try {
    await sleep(startAt - Date.now() + Number(id) * 150); // the nodes' schedulers start apart
    const task = cron.schedule(
      '* * * * * *', // '0 3 * * *' in production
      async ({ date }) => {
        const fire = date.toISOString();
        console.log(`node ${id}: building the report of ${fire}`);
        await sleep(100); // buildNightlyReport()
        await db.incr(`report:runs:${fire}`);
      },
      {
        name: 'nightly-report', // the same on every node: the fire's lock is named after it
        distributed: true,
        runCoordinator: noLock ? { shouldRun: () => true } : runCoordinator(client, { atLeastMs: 60_000 }),
      },
    );
    task.on('execution:skipped', ({ date }) => console.log(`node ${id}: another node has the report of ${date.toISOString()}, skipping`));
    await sleep(startAt + (FIRES + 3) * 1_000 - Date.now());
    await task.stop();
    await sleep(300); // a run under way ends
  } finally {
    await client.close();
    db.disconnect();
  }
}

/** The demo: three nodes on one Redis; every fire of the seconds they all scheduled must run once. */
async function main(noLock: boolean): Promise<void> {
  await using redis = await startRedis();
  const startAt = Date.now() + 2_000; // after the nodes have started
  const file = fileURLToPath(import.meta.url);
  await Promise.all(
    [1, 2, 3].map(
      (id) =>
        new Promise<void>((resolve, reject) =>
          fork(file, ['node', String(id), redis.url, String(startAt), String(noLock)]).once('exit', (code) =>
            code === 0 ? resolve() : reject(new Error(`node ${id} exited with code ${code}`)),
          ),
        ),
    ),
  );
  // The fires every node had scheduled: the full seconds from a second after the last one started.
  const first = Math.ceil((startAt + 450) / 1000) * 1000 + 1000;
  const fires = Array.from({ length: FIRES }, (_, i) => new Date(first + i * 1000).toISOString());
  const db = new Redis(redis.url);
  const runs = await Promise.all(fires.map(async (fire) => Number(await db.get(`report:runs:${fire}`))));
  db.disconnect();
  const once = runs.every((n) => n === 1);
  console.log(once ? `OK: each fire ran on one node of three (${fires.length} fires)` : `WRONG: the fires ran ${runs.join(', ')} times`);
  if (!once) process.exitCode = 1;
}

const [role, id, url, startAt, noLock] = process.argv.slice(2);
if (role === 'node') await node(id!, url!, Number(startAt), noLock === 'true');
else await main(process.argv.includes('--no-lock'));
