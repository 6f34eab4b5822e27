// A fault-test worker process: `loops` contending loops on one lock name (a `lock()`, a
// `fairLock()`, a semaphore, a read-write lock or multi-locks, as the harness says), through relock's
// public API. In each critical section: GET the counter, await a little, fenced SET of read + 1 (a
// reader GETs it again; a semaphore holder INCRs it; a multi-lock does it per member, with that
// member's token), and one JSON line per section appended
// (synchronously, so a SIGKILL loses nothing already logged) to its log file. The harness steers
// it by IPC: hold the next lease (to inject a fault), stop.
import { tracingChannel } from 'node:diagnostics_channel';
import { appendFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { LockClient, type AcquireTraceContext, type Lease, type Lock, type MultiLease } from '../../src/index.ts';
import { redisForOptions, TEST_LAYOUT } from '../helpers/clients.ts';
import { FENCED_SET, now, type Entry, type FromWorker, type HoldRequest, type MemberSection, type ToWorker, type WorkerConfig } from './protocol.ts';

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

// The loop's longest stall lately, for a lost lease's report: two windows of a second, the last full one and the current.
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();
let lastWindowMaxMs = 0;
setInterval(() => {
  lastWindowMaxMs = loopDelay.max / 1e6;
  loopDelay.reset();
}, 1_000).unref();
const recentStallMs = () => Math.round(Math.max(lastWindowMaxMs, loopDelay.max / 1e6));

const errors: Record<string, number> = {};
function count(error: unknown): void {
  const name = (error as { code?: unknown; name?: unknown })?.code ?? (error as Error)?.name ?? 'Error';
  const key = `${String(name)}: ${String((error as Error)?.message ?? error).slice(0, 80)}`;
  errors[key] = (errors[key] ?? 0) + 1;
}

// With RELOCK_TEST_LAYOUT=redisson, Redisson's layout (its keys have no prefix: the name is unique per run).
const layout = TEST_LAYOUT === 'redisson' ? ({ layout: 'redisson' } as const) : { prefix: config.prefix };
const client = new LockClient({ redis: redisForOptions(config.redis), ...layout, leaseMs: config.leaseMs });
client.on('error', count);
const storage = new Redis({ ...config.storage, lazyConnect: false });
storage.on('error', count);
const lock = config.kind === 'fair-lock' ? client.fairLock(config.name) : client.lock(config.name);
// A fair lock's waiters report when their join ran on Redis (`queuedAt`): the order it serves in. The
// acquire's tracing context is published synchronously within the acquire() call.
let traced: AcquireTraceContext | undefined;
if (config.kind === 'fair-lock') {
  tracingChannel('relock:acquire').subscribe({
    start: (context) => void (traced = context as AcquireTraceContext),
    end() {},
    asyncStart() {},
    asyncEnd() {},
    error() {},
  });
}

/** The family's factories, by their contract names (typed here so that this file does not wait for them). */
interface Family {
  semaphore(name: string, options: { permits: number }): { acquire(options?: { leaseMs?: number; permits?: number }): Promise<Lease> };
  readWriteLock(name: string): { readLock(): Lock; writeLock(): Lock };
}
const family = client as unknown as Family;
const semaphore = config.kind === 'semaphore' ? family.semaphore(config.name, { permits: config.permits ?? 1 }) : undefined;
const rwLock = config.kind === 'rw-lock' ? family.readWriteLock(config.name) : undefined;
const election = config.kind === 'leader' ? client.leader(config.name, { candidate: `worker-${worker}` }) : undefined;

/**
 * A term as a section's lease: its epoch the token, resign() the release (it resolves after a loss,
 * which the signal told), its signal's aborts but the resignation's own (a release, not a loss).
 */
async function term(): Promise<Lease> {
  const leadership = await election!.campaign();
  const lost = new AbortController();
  const follow = () => (leadership.signal.reason as { code?: string }).code !== 'ERR_LOCK_RESIGNED' && lost.abort(leadership.signal.reason);
  if (leadership.signal.aborted) follow();
  else leadership.signal.addEventListener('abort', follow, { once: true });
  return { name: config!.name, fencingToken: leadership.epoch, holdCount: 1, signal: lost.signal, release: () => leadership.resign(), run: (fn) => Promise.resolve(fn()), [Symbol.asyncDispose]: () => leadership.resign() };
}

/** mulberry32: the per-section choices, seeded. */
let seed = (config.seed ?? worker + 1) >>> 0;
function random(): number {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

/** What the next section holds: its side, its permits, its members, and how it is acquired. */
interface Choice {
  readonly mode?: 'read' | 'write';
  readonly permits?: number;
  readonly members?: readonly string[];
  acquire(options: { leaseMs: number } | undefined): Promise<Lease>;
}

function choose(): Choice {
  switch (config!.kind) {
    case 'semaphore': {
      const permits = 1 + Math.floor(random() * (config!.maxPermits ?? 1));
      return { permits, acquire: (options) => semaphore!.acquire({ ...options, permits }) };
    }
    case 'rw-lock': {
      // A hold asked for one side makes the next section that side.
      const mode = pendingHold?.mode ?? (random() < (config!.readRatio ?? 0.5) ? 'read' : 'write');
      return { mode, acquire: (options) => (mode === 'read' ? rwLock!.readLock() : rwLock!.writeLock()).acquire(options) };
    }
    case 'multi-lock': {
      const names = [...config!.members!];
      for (let i = names.length - 1; i > 0; i--) {
        const j = Math.floor(random() * (i + 1));
        [names[i], names[j]] = [names[j]!, names[i]!];
      }
      // 2 or 3 of them: with 4 names, two sections may hold disjoint pairs and run side by side.
      const members = names.slice(0, 2 + Math.floor(random() * Math.min(2, names.length - 1)));
      return { members, acquire: (options) => client.multiLock(members.map((name) => client.lock(name))).acquire(options) };
    }
    case 'leader':
      return { acquire: term };
    default:
      return { acquire: (options) => lock.acquire(options) };
  }
}

let stopping = false;
let sections = 0;
let pendingHold: HoldRequest | undefined;
/** Ends the hold in progress that waits to be told (`untilTold`). */
let endHold: (() => void) | undefined;
let holdEnded = false;
/** Loop -> when its pending acquire() began. */
const waiting = new Map<number, number>();

process.on('message', (message: ToWorker) => {
  if (message.type === 'hold') pendingHold = message.hold;
  if (message.type === 'end-hold') {
    holdEnded = true;
    endHold?.();
  }
  if (message.type === 'stop') void stop();
});

function errorCode(error: unknown): string {
  const e = error as { code?: unknown; name?: unknown };
  return String(e?.code ?? e?.name ?? 'Error');
}

/** Resolves when `signal` aborts, when told (`untilTold`), or after `ms` unless `untilLost`. */
function holdFor(hold: HoldRequest, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted || (hold.untilTold && holdEnded)) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      endHold = undefined;
      resolve();
    };
    if (hold.untilTold) endHold = done;
    // A hold "until lost" (or told) that never is still ends, so that the harness reports it.
    const timer = setTimeout(done, hold.untilLost || hold.untilTold ? 120_000 : hold.ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

async function fencedSet(value: number, token: number, member?: string): Promise<'ok' | 'stale'> {
  const keys = member === undefined ? [config!.counterKey, config!.fenceKey] : [`${config!.counterKey}:${member}`, `${config!.fenceKey}:${member}`];
  const written = await storage.eval(FENCED_SET, 2, ...keys, value, token);
  return written === 1 ? 'ok' : 'stale';
}

/** The section's reads: the counter, or each member's counter. */
async function read(entry: Entry): Promise<void> {
  if (entry.members) {
    await Promise.all(entry.members.map(async (m) => (m.read = Number((await storage.get(`${config!.counterKey}:${m.name}`)) ?? 0))));
    entry.read = 0;
  } else entry.read = Number((await storage.get(config!.counterKey)) ?? 0);
}

/** The section's write while it holds: fenced read + 1 (per member), a reader's second GET, a semaphore holder's INCR. */
async function write(entry: Entry): Promise<void> {
  if (entry.members) {
    await Promise.all(entry.members.map(async (m) => (m.write = await fencedSet(m.read + 1, m.token, m.name))));
    entry.write = entry.members.every((m) => m.write === 'ok') ? 'ok' : 'stale';
  } else if (entry.mode === 'read') entry.reread = Number((await storage.get(config!.counterKey)) ?? 0);
  else if (entry.permits !== undefined) entry.write = (await storage.incr(config!.counterKey)) > 0 ? 'ok' : 'none';
  else entry.write = await fencedSet(entry.read + 1, entry.token);
}

/** A write sent on purpose after the loss was signalled: only a fenced one shows anything. */
async function lateWrite(entry: Entry): Promise<void> {
  if (entry.members) {
    for (const m of entry.members) m.late = { at: now(), write: await fencedSet(m.read + 1, m.token, m.name) };
  } else if (entry.mode !== 'read' && entry.permits === undefined) {
    const at = now();
    entry.late = { at, write: await fencedSet(entry.read + 1, entry.token) };
  }
}

async function section(loop: number): Promise<void> {
  // On the shared clock, right before the call: the checker's FIFO order.
  const asked = now();
  waiting.set(loop, asked);
  const choice = choose();
  let lease: Lease;
  let trace: AcquireTraceContext | undefined;
  try {
    traced = undefined;
    const acquiring = choice.acquire(config!.fixedLeaseMs === undefined ? undefined : { leaseMs: config!.fixedLeaseMs });
    trace = traced as AcquireTraceContext | undefined; // set by the start event, within the call
    lease = await acquiring;
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
  if (trace?.queuedAt !== undefined) entry.queuedAt = trace.queuedAt;
  if (choice.mode) entry.mode = choice.mode;
  if (choice.permits !== undefined) entry.permits = choice.permits;
  if (choice.members) {
    const leases = (lease as MultiLease).members;
    entry.members = choice.members.map((name, i): MemberSection => ({ name, token: leases[i]!.fencingToken, read: -1, write: 'none' }));
  }
  // A hold asked for one side waits for a section of that side.
  const hold = pendingHold && (pendingHold.mode === undefined || pendingHold.mode === choice.mode) ? pendingHold : undefined;
  if (hold) {
    pendingHold = undefined;
    holdEnded = false;
  }
  const onLost = () => {
    entry.lostAt = now();
    entry.lostCode = errorCode(lease.signal.reason);
    entry.lostStallMs = recentStallMs();
    entry.lostWhy = `${String((lease.signal.reason as Error)?.message ?? lease.signal.reason)} (event loop stalled up to ${entry.lostStallMs} ms in the 1-2 s before)`;
    if (hold) send({ type: 'lost', worker, entry });
  };
  // The negative control (blind) sees no signal at all.
  if (!config!.blind) {
    if (lease.signal.aborted) onLost();
    else lease.signal.addEventListener('abort', onLost, { once: true });
  }
  try {
    entry.sentAt = now();
    await read(entry);
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
      entry.sentAt = now();
      await write(entry);
      entry.end = now();
    } else if (hold?.lateWrite) {
      await lateWrite(entry);
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
