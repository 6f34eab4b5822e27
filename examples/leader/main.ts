// A scheduler that must run on exactly one node: three node processes (node.ts next to this file)
// stand for leader in one election, `client.leader('scheduler')`; the leader ticks every 100 ms, each
// tick a Redis write fenced by its term's epoch. This process watches who leads (`observe()`) and
// plays two failures: the first leader is killed (SIGKILL: it cannot resign, so its term ends with
// its lease), then the next is shut down cleanly (SIGTERM: it resigns, and the last node takes over
// at once). `--no-lock` runs the nodes without the election: all three lead, and their ticks mix.
//
//   node --import tsx examples/leader/main.ts [--no-lock]   # exits 1 unless one node led at a time
//
// Redis: REDIS_URL, else a private redis-server, else Docker (relock/testing's startRedis).
import { type ChildProcess, fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { type LeaderInfo, LockClient } from 'relock';
import { startRedis } from 'relock/testing';

/** The terms' lease: a killed leader is replaced within about this (docs/jobs.md, choosing leaseMs). */
const LEASE_MS = 2_000;
const noLock = process.argv.includes('--no-lock');
const run = `leader-example:${randomUUID()}`; // this run's keys: its ticks and the fence's highest epoch

await using redis = await startRedis();
const client = new LockClient({ redis: redis.url });

// Every change of leader, pushed by pub/sub. Late by design (a dead leader shows at its lease's end):
// fine to show and count, not to decide who may write; the epoch decides that.
const terms: LeaderInfo[] = [];
const watching = new AbortController();
const observing = (async () => {
  for await (const leader of client.leader('scheduler').observe({ signal: watching.signal })) {
    if (leader) terms.push(leader);
    console.log(leader ? `leader now ${leader.candidate} (epoch ${leader.epoch})` : 'nobody leads');
  }
})();

// The nodes, and those that say they lead, with when they said it (this process's clock).
const nodes = new Map<string, ChildProcess>();
const leading = new Map<string, number>();
const exits = [1, 2, 3].map((id) => {
  const candidate = `node-${id}`;
  const child = fork(fileURLToPath(new URL('node.ts', import.meta.url)), [String(id), redis.url, run, String(LEASE_MS), String(noLock)]);
  nodes.set(candidate, child);
  child.on('message', (message) => {
    const { leading: epoch } = message as { leading?: number | null };
    if (typeof epoch === 'number') leading.set(candidate, Date.now());
    else if (epoch === null) leading.delete(candidate);
  });
  return new Promise<void>((resolve) =>
    child.once('exit', () => {
      leading.delete(candidate);
      resolve();
    }),
  );
});

/** A node that leads, other than `but`, within `ms`: its name and when it began to lead. */
async function leader(but: string | undefined, ms: number): Promise<[string, number]> {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(10)) {
    const found = [...leading].find(([candidate]) => candidate !== but);
    if (found) return found;
  }
  throw new Error(`no node took over within ${ms} ms`);
}

let takeoverMs = Infinity; // from the SIGKILL to the next leader
let handoverMs = Infinity; // from the SIGTERM to the next leader
try {
  const [first] = await leader(undefined, 30_000); // the nodes are starting
  await sleep(1_000); // it works a while
  console.log(`killing ${first} (SIGKILL)`); // it cannot resign: its term ends with its lease
  const killedAt = Date.now();
  nodes.get(first)!.kill('SIGKILL');
  const [second, tookOver] = await leader(first, LEASE_MS + 3_000);
  takeoverMs = Math.max(0, tookOver - killedAt); // 0 without the lock: it was leading already
  console.log(`${second} leads, ${takeoverMs} ms after the kill`);
  await sleep(1_000);
  console.log(`stopping ${second} (SIGTERM)`); // it resigns: the next is woken at once
  const stoppedAt = Date.now();
  nodes.get(second)!.kill('SIGTERM');
  const [third, handedOver] = await leader(second, LEASE_MS + 3_000);
  handoverMs = Math.max(0, handedOver - stoppedAt);
  console.log(`${third} leads, ${handoverMs} ms after the SIGTERM`);
  await sleep(500);
} catch (error) {
  console.log(`${error}`); // the check below says what is missing
} finally {
  for (const child of nodes.values()) child.kill('SIGTERM'); // each resigns, if it leads, and closes
  await Promise.all(exits);
  watching.abort();
  await observing;
  await client.close();
}

// The ticks, in the order Redis wrote them.
const db = new Redis(redis.url);
const ticks = (await db.lrange(`${run}:ticks`, 0, -1)).map((tick) => JSON.parse(tick) as { epoch: number; candidate: string });
await db.del(`${run}:ticks`, `${run}:epoch`);
db.disconnect();

/** Two leaders at once show in the ticks as two nodes in one epoch, or an older epoch after a newer. */
function twoLeaders(): string | undefined {
  const owners = new Map<number, string>();
  for (const [i, tick] of ticks.entries()) {
    const owner = owners.get(tick.epoch) ?? tick.candidate;
    if (owner !== tick.candidate) return `TWO LEADERS: ${owner} and ${tick.candidate} both ticked in epoch ${tick.epoch}`;
    const before = ticks[i - 1];
    if (before && tick.epoch < before.epoch) return `TWO LEADERS: ${tick.candidate} ticked in epoch ${tick.epoch} after ${before.candidate} in epoch ${before.epoch}`;
    owners.set(tick.epoch, tick.candidate);
  }
  return undefined;
}

const inOrder = terms.every((term, i) => i === 0 || term.epoch > terms[i - 1]!.epoch);
const byTerm = new Map<string, number>();
for (const { candidate, epoch } of ticks) byTerm.set(`${candidate} in epoch ${epoch}`, (byTerm.get(`${candidate} in epoch ${epoch}`) ?? 0) + 1);
console.log(`ticks written: ${[...byTerm].map(([term, n]) => `${n} by ${term}`).join(', ')}; ${terms.length} terms observed`);
const wrong =
  twoLeaders() ??
  (terms.length < 3 || !inOrder ? `WRONG: the observer saw ${terms.length} terms${inOrder ? '' : ' out of order'}, expected 3 in order` : undefined) ??
  (takeoverMs > LEASE_MS + 1_000 ? `SLOW: taken over ${takeoverMs} ms after the kill, more than the lease (${LEASE_MS} ms) + 1 s` : undefined) ??
  (handoverMs > 1_000 ? `SLOW: taken over ${handoverMs} ms after a resignation: it should wake the next at once` : undefined);
console.log(wrong ?? `OK: one leader at a time, epochs increasing, taken over after a kill in ${takeoverMs} ms (after a resignation in ${handoverMs} ms)`);
if (wrong) process.exitCode = 1;
