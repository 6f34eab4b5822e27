// A fault-test worker process: `loops` contending loops on one lock name (a `lock()` or a
// `fairLock()`, as the harness says), through relock's public API. In each critical section: GET
// the counter, await a little, fenced SET of read + 1, and one JSON line per section appended
// (synchronously, so a SIGKILL loses nothing already logged) to its log file. The harness steers
// it by IPC: hold the next lease (to inject a fault), stop.
import { appendFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { LockClient, type Lease } from '../../src/index.ts';
import { FENCED_SET, now, type Entry, type FromWorker, type HoldRequest, type ToWorker, type WorkerConfig } from './protocol.ts';

const config = JSON.parse(process.env.RELOCK_FAULT_WORKER ?? 'null') as WorkerConfig | null;
if (!config || !process.send) throw new Error('worker.ts is forked by the fault harness, with RELOCK_FAULT_WORKER and IPC');
const { worker } = config;

function send(message: FromWorker): void {
  if (process.connected) process.send!(message);
}

// An orphaned worker must not outlive its harness.
process.on('disconnect', () => process.exit(1));
process.on('unhandledRejection', (error) => {
  send({ type: 'fatal', worker, message: `unhandled rejection: ${String((error as Error)?.stack ?? error)}` });
  setTimeout(() => process.exit(2), 50);
});

const errors: Record<string, number> = {};
function count(error: unknown): void {
  const name = (error as { code?: unknown; name?: unknown })?.code ?? (error as Error)?.name ?? 'Error';
  const key = `${String(name)}: ${String((error as Error)?.message ?? error).slice(0, 80)}`;
  errors[key] = (errors[key] ?? 0) + 1;
}

const client = new LockClient({ redis: config.redis, prefix: config.prefix, leaseMs: config.leaseMs });
client.on('error', count);
const storage = new Redis({ ...config.storage, lazyConnect: false });
storage.on('error', count);
const lock = config.kind === 'fair-lock' ? client.fairLock(config.name) : client.lock(config.name);

let stopping = false;
let sections = 0;
let pendingHold: HoldRequest | undefined;
/** Loop -> when its pending acquire() began. */
const waiting = new Map<number, number>();

process.on('message', (message: ToWorker) => {
  if (message.type === 'hold') pendingHold = message.hold;
  if (message.type === 'stop') void stop();
});

function errorCode(error: unknown): string {
  const e = error as { code?: unknown; name?: unknown };
  return String(e?.code ?? e?.name ?? 'Error');
}

/** Resolves when `signal` aborts, or after `ms` unless `untilLost`. */
function holdFor(hold: HoldRequest, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    // A hold "until lost" that is never lost still ends, so that the harness reports it.
    const timer = setTimeout(done, hold.untilLost ? 120_000 : hold.ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

async function fencedSet(value: number, token: number): Promise<'ok' | 'stale'> {
  const written = await storage.eval(FENCED_SET, 2, config!.counterKey, config!.fenceKey, value, token);
  return written === 1 ? 'ok' : 'stale';
}

async function section(loop: number): Promise<void> {
  // On the shared clock, right before the call: the checker's FIFO order.
  const asked = now();
  waiting.set(loop, asked);
  let lease: Lease;
  try {
    lease = await lock.acquire(config!.fixedLeaseMs === undefined ? undefined : { leaseMs: config!.fixedLeaseMs });
  } catch (error) {
    // Redis unreachable (a restart): count it, and try again as an application would.
    count(error);
    await sleep(50 + Math.random() * 50);
    return;
  } finally {
    waiting.delete(loop);
  }
  const start = now();
  const entry: Entry = {
    worker,
    loop,
    token: lease.fencingToken,
    asked,
    start,
    end: start,
    waitMs: start - asked,
    read: -1,
    write: 'none',
    lostAt: null,
  };
  const hold = pendingHold;
  pendingHold = undefined;
  const onLost = () => {
    entry.lostAt = now();
    entry.lostCode = errorCode(lease.signal.reason);
    if (hold) send({ type: 'lost', worker, entry });
  };
  // The negative control (blind) sees no signal at all.
  if (!config!.blind) {
    if (lease.signal.aborted) onLost();
    else lease.signal.addEventListener('abort', onLost, { once: true });
  }
  try {
    entry.read = Number((await storage.get(config!.counterKey)) ?? 0);
    entry.end = now();
    if (hold) {
      send({ type: 'holding', worker, entry });
      await holdFor(hold, lease.signal);
    } else {
      const ms = Math.floor(Math.random() * (config!.maxAwaitMs + 1));
      await (ms === 0 ? new Promise((resolve) => setImmediate(resolve)) : sleep(ms));
    }
    // The rule of the API: stop writing once the signal aborted.
    if (config!.blind || !lease.signal.aborted) {
      entry.write = await fencedSet(entry.read + 1, entry.token);
      entry.end = now();
    } else if (hold?.lateWrite) {
      const at = now();
      entry.late = { at, write: await fencedSet(entry.read + 1, entry.token) };
    }
  } catch (error) {
    count(error);
  } finally {
    try {
      await lease.release();
      entry.release = 'ok';
    } catch (error) {
      entry.release = errorCode(error);
      if (entry.release !== 'ERR_LOCK_NOT_HELD') count(error);
    }
    lease.signal.removeEventListener('abort', onLost);
    sections++;
    appendFileSync(config!.logFile, `${JSON.stringify(entry)}\n`);
    if (hold) send({ type: 'released', worker, entry });
  }
}

async function loop(index: number): Promise<void> {
  while (!stopping) await section(index);
}

const loops = Array.from({ length: config.loops }, (_, index) => loop(index));
send({ type: 'ready', worker, clientId: client.id });

let stopped = false;
async function stop(): Promise<void> {
  if (stopped) return;
  stopped = true;
  stopping = true;
  const hang = setTimeout(() => {
    const at = now();
    const hung = [...waiting].map(([loop, since]) => ({ worker, loop, waitingMs: at - since }));
    send({ type: 'hung', worker, hung, stats: { sections, errors } });
    setTimeout(() => process.exit(3), 50);
  }, config!.hangMs);
  await Promise.all(loops);
  clearTimeout(hang);
  await client.close();
  await storage.quit().catch(() => storage.disconnect());
  process.send!({ type: 'done', worker, stats: { sections, errors } } satisfies FromWorker, () => process.exit(0));
}
