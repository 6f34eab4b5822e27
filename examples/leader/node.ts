// One node of examples/leader/main.ts: an in-process scheduler that must run on exactly one node.
// Every node stands for leader in the 'scheduler' election, as docs/jobs.md's loop does; the leader
// ticks every 100 ms, each tick a write fenced by its term's epoch, while the others wait (woken by
// pub/sub) to take over when it goes. SIGTERM makes it resign first, then close: the next node
// takes over at once instead of waiting out the lease. With noLock it skips the election and ticks.
//
//   forked by main.ts: node --import tsx examples/leader/node.ts <id> <redis url> <run> <leaseMs> <noLock>
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { LockClient } from 'relock';

const [id, url, run, leaseMs, noLock] = process.argv.slice(2);
const candidate = `node-${id}`;
const client = new LockClient({ redis: url });
const db = new Redis(url!); // stands for the store the scheduler writes to
const election = client.leader('scheduler', { candidate, leaseMs: Number(leaseMs) });

// The fence: a tick is written only when its epoch is at least the highest one written so far,
// checked and written in one script. `<=`, not `<`: a leader writes many times in one term. A leader
// that lost its term without knowing it yet (paused, cut off) cannot write after a later one.
const FENCED_TICK = `
local highest = tonumber(redis.call('GET', KEYS[1]) or '-1')
if tonumber(ARGV[1]) < highest then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('RPUSH', KEYS[2], ARGV[2])
return 1`;

/** The leader's work: a tick every 100 ms until `signal` aborts or a later term has written. */
async function schedule(epoch: number, signal: AbortSignal): Promise<number> {
  let ticks = 0;
  while (!signal.aborted) {
    const tick = JSON.stringify({ epoch, candidate });
    const written = await db.eval(FENCED_TICK, 2, `${run}:epoch`, `${run}:ticks`, String(epoch), tick);
    if (written === 0) {
      console.log(`${candidate}: a later leader has written, stopping`); // whatever our signal says
      break;
    }
    ticks++;
    await sleep(100, undefined, { signal }).catch(() => {}); // the scheduler's next due task
  }
  return ticks;
}

// What main.ts is told: this node leads (its epoch) or no longer does (null).
const tell = (leading: number | null) => process.connected && process.send!({ candidate, leading });

const shutdown = new AbortController();
process.once('SIGTERM', () => shutdown.abort());
// main.ts went away (killed, say): do not stay behind. It may have gone while this file loaded.
if (process.connected) process.once('disconnect', () => shutdown.abort());
else shutdown.abort();

/** Stands for leader until shutdown; leads (ticks) whenever elected. */
async function standForLeader(): Promise<void> {
  while (!shutdown.signal.aborted) {
    try {
      // Waits, woken by pub/sub, while another node leads. Rejects with shutdown's reason.
      await using leadership = await election.campaign({ signal: shutdown.signal });
      console.log(`${candidate}: leading, epoch ${leadership.epoch}`);
      tell(leadership.epoch);
      // The work, until the term ends (lost, or resigned) or the node shuts down.
      const ticks = await schedule(leadership.epoch, AbortSignal.any([leadership.signal, shutdown.signal]));
      console.log(`${candidate}: stopped leading after ${ticks} ticks${shutdown.signal.aborted ? ' (shutting down: resigning)' : ''}`);
      tell(null);
      // Leaving the block resigns the term (`await using`): the next candidate is woken at once.
    } catch (error) {
      if (shutdown.signal.aborted) return;
      // Redis could not be reached, or the work failed: stand again a little later.
      console.log(`${candidate}: ${error}; standing again in 1 s`);
      await sleep(1_000, undefined, { signal: shutdown.signal }).catch(() => {});
    }
  }
}

if (noLock === 'true') {
  // No election: every node believes it leads, and there is no epoch to fence with (0 for all).
  console.log(`${candidate}: leading, no election`);
  tell(0);
  await schedule(0, shutdown.signal);
} else {
  await standForLeader();
}
// Stop leading first (done above), then close: close() alone would not resign, and the others
// would wait for the lease to end.
await client.close();
db.disconnect();
if (process.connected) process.disconnect(); // the IPC channel would keep this process up
