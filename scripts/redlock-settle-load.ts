// Issue 30, point 8, on a loaded machine: 5 private masters, a foreign hold on 3 of them, and
// `acquire({ waitMs: 300 })` from a Redlock client; right after each rejection, neither free master
// may hold anything of the attempt. Two CPU-burning processes (`node -e 'for(;;){}'`) run beside it
// the whole time and are killed at the end. RUNS runs of ROUNDS rounds (default 20 of 20), each run
// with a new client (its connections made lazily at its first command). Prints the leftovers found
// per run and exits 1 if any. Run: node --import tsx scripts/redlock-settle-load.ts
import { spawn } from 'node:child_process';
import { LockClient, LockTimeoutError } from '../src/index.ts';
import { startRedis } from '../test/helpers/redis.ts';

const RUNS = Number(process.env.RUNS ?? 20);
const ROUNDS = Number(process.env.ROUNDS ?? 20);

const burners = [0, 1].map(() => spawn(process.execPath, ['-e', 'for(;;){}'], { stdio: 'ignore' }));
const servers = await Promise.all(Array.from({ length: 5 }, () => startRedis({ private: true })));
const admins = servers.map((server) => server.connect());
let leftovers = 0;
try {
  for (let run = 0; run < RUNS; run++) {
    const client = new LockClient({ redis: servers.map((server) => server.url) });
    client.on('error', () => undefined);
    let found = 0;
    let rejected = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const name = `load:${run}:${round}:${Math.random().toString(36).slice(2)}`;
      const key = `relock:{${name}}`;
      for (const i of [0, 1, 2]) {
        await admins[i]!.hset(key, 'other:owner', '1');
        await admins[i]!.pexpire(key, 60_000);
      }
      try {
        await (await client.lock(name).acquire({ waitMs: 300 })).release();
        console.log(`run ${run} round ${round}: acquired a lock held on 3 of 5 masters`);
        leftovers++;
      } catch (error) {
        if (!(error instanceof LockTimeoutError)) console.log(`run ${run} round ${round}: rejected with ${(error as Error).message}`);
        rejected++;
      }
      const left = await Promise.all([3, 4].map((i) => admins[i]!.exists(key)));
      found += left.filter((n) => n === 1).length;
    }
    leftovers += found;
    console.log(`run ${run + 1}/${RUNS}: ${rejected} of ${ROUNDS} rejected, holds of a rejected attempt found on a free master right after: ${found}`);
    await client.close();
  }
} finally {
  for (const burner of burners) burner.kill('SIGKILL');
  for (const admin of admins) admin.disconnect();
  await Promise.all(servers.map((server) => server.stop()));
}
console.log(`total: ${leftovers} leftovers in ${RUNS} runs of ${ROUNDS}`);
process.exit(leftovers === 0 ? 0 : 1);
