// What the fault harness, its workers and the checker share: the clock, the log entry, the IPC
// messages and the fenced write on the storage Redis.

/**
 * Milliseconds on CLOCK_MONOTONIC (process.hrtime), which every process on the machine shares, so
 * times logged by different workers compare. performance.now() has a per-process origin.
 */
export function now(): number {
  return Number(process.hrtime.bigint() / 1000n) / 1000;
}

/** The lock primitives the fault suite runs against. */
export type LockKind = 'lock' | 'fair-lock' | 'semaphore' | 'rw-lock' | 'multi-lock' | 'leader';

/** A multi-lock section's part on one member: that member's own token, and its counter's read-modify-write. */
export interface MemberSection {
  readonly name: string;
  readonly token: number;
  read: number;
  write: 'ok' | 'stale' | 'none';
  late?: { readonly at: number; readonly write: 'ok' | 'stale' };
}

/** One critical section, as the worker that ran it logs it. */
export interface Entry {
  readonly worker: number;
  readonly loop: number;
  /** The fencing token of the lease. */
  readonly token: number;
  /** When acquire() was called (the FIFO check compares callers by it, unless they have `queuedAt`). */
  readonly asked: number;
  /**
   * A fair lock's acquisition that joined the queue: when the join ran, on the Redis server's clock
   * (ms, `AcquireTraceContext.queuedAt`). The FIFO check compares these where the entries have them:
   * two callers a millisecond apart in two processes may reach Redis in either order.
   */
  queuedAt?: number;
  /** When acquire() resolved. */
  readonly start: number;
  /**
   * When the last effect made while `lease.signal` was not aborted finished: the fenced SET of a
   * normal section; the GET when the section learnt its loss before writing.
   */
  end: number;
  /**
   * When the storage command whose reply set `end` was sent. The storage Redis is never faulted, so
   * that command ran there no later than it arrived: a worker SIGSTOPped after sending it sets `end`
   * only after SIGCONT, though its effect came before the stop (see checker.ts, `stoppedEnds`).
   */
  sentAt?: number;
  /** How long acquire() took (start - asked), in milliseconds. */
  readonly waitMs: number;
  /** The counter value the section read (its GET), -1 when the GET failed. */
  read: number;
  /** Its fenced SET of read + 1: accepted, rejected as stale by the fence, or not sent. */
  write: 'ok' | 'stale' | 'none';
  /** When `lease.signal` aborted during the section, or null. */
  lostAt: number | null;
  /** The `code` of the signal's reason. */
  lostCode?: string;
  /**
   * Why, for a run's report: the reason's message, and the longest the worker's event loop stalled in
   * the two seconds before (a loop stalled past the lease's slack cannot renew it in time).
   */
  lostWhy?: string;
  /** The longest the worker's event loop stalled in the one to two seconds before the loss, in ms. */
  lostStallMs?: number;
  /** A write sent on purpose after the loss was signalled (scenario 2): the fence must reject it. */
  late?: { readonly at: number; readonly write: 'ok' | 'stale' };
  /** 'ok' or the `code` (else `name`) of the error release() rejected with. */
  release?: string;
  /** The worker was SIGKILLed while it held this lease (the harness writes such entries). */
  killed?: boolean;
  /** Semaphore: the permits this lease holds. */
  permits?: number;
  /** Read-write lock: the side this section holds. */
  mode?: 'read' | 'write';
  /** Read-write lock, a reader: the counter read again at the end (equal to `read` unless a write came between). */
  reread?: number;
  /** Multi-lock: the members this section holds, each with its own token and counter. */
  members?: MemberSection[];
}

/** A section that only held (no counter read or write) as the checker's entry: its capacity functions read start, end, lostAt, permits and mode. */
export function heldEntry(section: { client: number; token: number; asked: number; start: number; end: number; lostAt: number | null; permits?: number | undefined; mode?: 'read' | 'write' | undefined }): Entry {
  return {
    worker: section.client,
    loop: 0,
    token: section.token,
    asked: section.asked,
    start: section.start,
    end: section.end,
    waitMs: section.start - section.asked,
    read: 0,
    write: 'none',
    lostAt: section.lostAt,
    ...(section.mode ? { mode: section.mode } : {}),
    ...(section.permits === undefined ? {} : { permits: section.permits }),
  };
}

/** A waiter that never got the lock: reported by a worker that was asked to stop. */
export interface Hung {
  readonly worker: number;
  readonly loop: number;
  readonly waitingMs: number;
  /** Why the wait ended, when not by a plain timeout (the error's code: ERR_LOCK_UNREACHABLE). */
  readonly cause?: string;
}

/** How a worker holds its next lease, when the harness asks it to (to inject a fault then). */
export interface HoldRequest {
  /** Hold until `lease.signal` aborts (true), or for `ms` at most. */
  readonly untilLost: boolean;
  readonly ms: number;
  /** Hold until the harness sends `end-hold` (or the signal aborts): `ms` is ignored. */
  readonly untilTold?: boolean;
  /** After a signalled loss, still send the fenced write (to show that the fence rejects it). */
  readonly lateWrite: boolean;
  /** Read-write lock: hold a section of this side (the next one of that side). */
  readonly mode?: 'read' | 'write';
}

export type ToWorker = { readonly type: 'hold'; readonly hold: HoldRequest } | { readonly type: 'end-hold' } | { readonly type: 'stop' };

export interface WorkerStats {
  readonly sections: number;
  /** Errors by name: acquire rejections, client 'error' events, release errors other than a lost hold. */
  readonly errors: Readonly<Record<string, number>>;
}

export type FromWorker =
  /** `clientId` is the worker's LockClient id: the first part of its owner fields in Redis. */
  | { readonly type: 'ready'; readonly worker: number; readonly clientId: string }
  | { readonly type: 'holding'; readonly worker: number; readonly entry: Entry }
  | { readonly type: 'lost'; readonly worker: number; readonly entry: Entry }
  | { readonly type: 'released'; readonly worker: number; readonly entry: Entry }
  | { readonly type: 'done'; readonly worker: number; readonly stats: WorkerStats }
  | { readonly type: 'hung'; readonly worker: number; readonly hung: readonly Hung[]; readonly stats: WorkerStats }
  | { readonly type: 'fatal'; readonly worker: number; readonly message: string };

/** What a worker is told at its start (JSON in RELOCK_FAULT_WORKER). */
export interface WorkerConfig {
  readonly worker: number;
  readonly loops: number;
  /** ioredis options of the lock client (through a proxy, over TLS, as an ACL user...). */
  readonly redis: Record<string, unknown>;
  /** ioredis options of the storage Redis that holds the counter. */
  readonly storage: Record<string, unknown>;
  readonly prefix: string;
  readonly name: string;
  /**
   * Which primitive the loops contend on: `client.lock(name)`, `client.fairLock(name)`,
   * `client.semaphore(name, { permits })`, `client.readWriteLock(name)`, `client.multiLock()` over
   * some of `members`, or `client.leader(name)` (a section is a term: campaign, then resign).
   */
  readonly kind: LockKind;
  /** Semaphore: the limit, and the most permits one acquire asks for (1 to that many, seeded). */
  readonly permits?: number;
  readonly maxPermits?: number;
  /** Read-write lock: the share of sections that read (chosen per section, seeded). */
  readonly readRatio?: number;
  /** Multi-lock: the member names; each section takes 2 or 3 of them, in a random order (seeded). */
  readonly members?: readonly string[];
  /** Seeds the per-section choices above. */
  readonly seed?: number;
  readonly leaseMs: number;
  /** acquire({ leaseMs }) with this fixed lease instead of the watchdog. */
  readonly fixedLeaseMs?: number;
  readonly counterKey: string;
  readonly fenceKey: string;
  /** The JSON-lines file the worker appends its entries to. */
  readonly logFile: string;
  /** The random await between GET and SET is 0 to this many milliseconds. */
  readonly maxAwaitMs: number;
  /**
   * The negative control: the worker ignores `lease.signal` entirely, as if relock never signalled a
   * loss, and writes anyway. The checker must then report overlaps.
   */
  readonly blind?: boolean;
  /** After `stop`, how long a loop may still wait for the lock before the worker reports it hung. */
  readonly hangMs: number;
}

/**
 * The SET of the racy read-modify-write, fenced: the storage keeps the highest token that wrote and
 * rejects a lower one. A stale holder's late write is thus visible (0), not silently applied. The GET
 * is a plain GET, so two holders that overlap lose an update and the counter shows it.
 *
 * KEYS[1] counter, KEYS[2] highest token that wrote; ARGV[1] new value, ARGV[2] token.
 * Returns 1 when written, 0 when the token is below the highest one (stale).
 */
export const FENCED_SET = `
local counterKey, fenceKey = KEYS[1], KEYS[2]
local value, token = ARGV[1], ARGV[2]
local highest = redis.call('GET', fenceKey)
if highest and tonumber(token) < tonumber(highest) then
  return 0
end
redis.call('SET', counterKey, value)
redis.call('SET', fenceKey, token)
return 1
`;
