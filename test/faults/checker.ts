// The checker: from the sections the workers logged, the counter on the storage Redis and the faults
// the harness injected, what went wrong. A pure function, so that a test can feed it a bad log.
import type { Entry, Hung, LockKind } from './protocol.ts';

/** A fault the harness injected, at a time on the shared monotonic clock. */
export interface Fault {
  readonly kind: string;
  readonly at: number;
  readonly worker?: number;
}

export interface Overlap {
  readonly earlier: Entry;
  readonly later: Entry;
  /** How long the earlier section still ran after the later one started. */
  readonly ms: number;
}

/** An acquisition granted before another whose acquire() was called earlier. */
export interface Overtake {
  /** The acquisition that was overtaken. */
  readonly entry: Entry;
  /** The one granted before it, whose acquire() was called the latest. */
  readonly by: Entry;
  /** How much later `by` called acquire() than `entry`. */
  readonly ms: number;
}

/**
 * A caller counts as later when its acquire() was called at least this long after another's:
 * calls closer than that (the two loops of one process, one event-loop turn) have no order worth
 * checking.
 */
export const FIFO_SLACK_MS = 1;

export interface Report {
  /** Sections that began (acquire() resolved), killed ones included. */
  readonly acquisitions: number;
  /** Fenced writes the storage accepted. */
  readonly completed: number;
  readonly overlaps: readonly Overlap[];
  /** Sections whose `lease.signal` aborted while they ran. */
  readonly lostLeases: number;
  /** Writes sent after a signalled loss that the fence rejected. */
  readonly staleWrites: number;
  /** Writes sent after a signalled loss that the fence accepted (no later holder had written). */
  readonly lateWritesAccepted: number;
  /**
   * Longest time a lost holder still believed it held while a later holder had started (a process
   * pause or a quick restart; its own writes are fenced).
   */
  readonly longestBeliefAfterHandoverMs: number;
  readonly longestWaitMs: number;
  /**
   * FIFO: acquisitions overtaken by a later caller, i.e. granted after some other acquisition that
   * arrived at least FIFO_SLACK_MS after theirs: joined the queue later on Redis's clock, where the
   * entries have `queuedAt` (a fair lock; entries without it are left out then), else had acquire()
   * called later. Granted means in token order (the order Redis granted them, which the check above
   * requires to be the order they began in). Only acquisitions asked for from `fifoFrom` on are judged.
   */
  readonly overtaken: readonly Overtake[];
  /** The acquisitions the FIFO check judged. */
  readonly fifoJudged: number;
  /** overtaken / fifoJudged (0 when none was judged). */
  readonly overtakenShare: number;
  /** Per fault: how long until any section began after it. */
  readonly stalls: readonly { readonly fault: Fault; readonly ms: number }[];
  readonly longestStallMs: number;
  readonly hung: readonly Hung[];
  /** Every violation, in words; empty when the run was correct. */
  readonly problems: readonly string[];
}

export interface CheckInput {
  readonly entries: readonly Entry[];
  /** The counter's final value on the storage Redis. */
  readonly counter: number;
  readonly faults?: readonly Fault[];
  readonly hung?: readonly Hung[];
  /** A larger overtaken share than this (0 to 1) is a problem; unset: reported only. */
  readonly maxOvertakenShare?: number;
  /**
   * The FIFO check judges acquisitions asked for from this time on (the harness: once every worker
   * runs; a client's first wait on a fair lock subscribes before it joins the queue, so callers of
   * processes still starting are legitimately behind). @default every acquisition
   */
  readonly fifoFrom?: number;
}

function show(entry: Entry): string {
  return `worker ${entry.worker}/loop ${entry.loop} token ${entry.token} [${entry.start.toFixed(1)}, ${entry.end.toFixed(1)}]`;
}

const MAX_LISTED = 5;

/** A waiter that never got the lock, as the report lists it. */
const hungLine = (h: Hung) => `worker ${h.worker}/loop ${h.loop} waited ${Math.round(h.waitingMs)} ms${h.cause ? ` (${h.cause})` : ''}`;

/** A share (0 to 1) in percent: one decimal, two below 1 %. */
export function percent(share: number): string {
  const value = share * 100;
  return value.toFixed(value > 0 && value < 1 ? 2 : 1);
}

export function check(input: CheckInput): Report {
  const entries = [...input.entries];
  const faults = input.faults ?? [];
  const hung = input.hung ?? [];
  const problems: string[] = [];
  const list = (what: string, items: readonly string[]) => {
    if (items.length === 0) return;
    const more = items.length > MAX_LISTED ? ` (and ${items.length - MAX_LISTED} more)` : '';
    problems.push(`${items.length} ${what}: ${items.slice(0, MAX_LISTED).join('; ')}${more}`);
  };

  // Fencing tokens: unique, and strictly increasing in acquisition order.
  const byStart = [...entries].sort((a, b) => a.start - b.start);
  const order: string[] = [];
  for (let i = 1; i < byStart.length; i++) {
    const before = byStart[i - 1]!;
    const after = byStart[i]!;
    if (after.token <= before.token) order.push(`${show(after)} began after ${show(before)} with a token not above it`);
  }
  list('fencing tokens not increasing in acquisition order', order);

  // Mutual exclusion: sorted by token, no section starts before an earlier one ended, unless the
  // earlier holder's signal had aborted by then (a lost lease is reported, not hidden).
  const byToken = [...entries].sort((a, b) => a.token - b.token);
  const overlaps: Overlap[] = [];
  let belief = 0;
  let open: Entry[] = [];
  for (const later of byToken) {
    for (const earlier of open) {
      if (earlier.token === later.token) continue;
      if (earlier.end > later.start && !(earlier.lostAt !== null && earlier.lostAt <= later.start)) {
        overlaps.push({ earlier, later, ms: earlier.end - later.start });
      }
      if (earlier.lostAt !== null && earlier.lostAt > later.start) belief = Math.max(belief, earlier.lostAt - later.start);
    }
    // Sections that ended before this one started cannot overlap the next ones either (token order
    // is acquisition order, checked above); the rest stay open.
    open = open.filter((entry) => entry.end > later.start || (entry.lostAt ?? 0) > later.start);
    open.push(later);
  }
  list(
    'overlapping holds',
    overlaps.map((o) => `${show(o.later)} began ${o.ms.toFixed(1)} ms before ${show(o.earlier)} ended`),
  );
  const tokens = new Map<number, number>();
  for (const entry of entries) tokens.set(entry.token, (tokens.get(entry.token) ?? 0) + 1);
  list(
    'fencing tokens issued twice',
    [...tokens].filter(([, n]) => n > 1).map(([token, n]) => `${token} (${n} sections)`),
  );

  // A holder that was never told of a loss must never be fenced off.
  list(
    'unsignalled stale writes',
    entries.filter((e) => e.write === 'stale').map((e) => `${show(e)}: its write was rejected by the fence while its signal had not aborted`),
  );

  // The counter: every accepted write counted once, each one reading what the previous one wrote.
  const accepted = entries.filter((e) => e.write === 'ok' || e.late?.write === 'ok').sort((a, b) => a.token - b.token);
  if (input.counter !== accepted.length) {
    problems.push(`counter is ${input.counter} but ${accepted.length} sections completed (lost or extra updates)`);
  }
  const lost: string[] = [];
  accepted.forEach((entry, i) => {
    if (entry.read !== i) lost.push(`${show(entry)} read ${entry.read}, but ${i} writes came before it`);
  });
  list('sections that did not read the previous write', lost);

  list(
    'waiters that never got the lock',
    hung.map(hungLine),
  );

  // FIFO: in grant (token) order, an acquisition is overtaken when an earlier-granted one arrived at
  // least FIFO_SLACK_MS after it; the latest arrival granted so far is the one to compare with. It
  // arrived when it joined the queue on Redis's clock where the log has that (a fair lock: the order
  // it promises), else when acquire() was called; entries without a join then are left out.
  const fifoFrom = input.fifoFrom ?? Number.NEGATIVE_INFINITY;
  const byJoin = entries.some((e) => e.queuedAt !== undefined);
  const arrived = (e: Entry) => (byJoin ? e.queuedAt! : e.asked);
  const compared = byToken.filter((e) => !byJoin || e.queuedAt !== undefined);
  const fifoJudged = compared.filter((e) => e.asked >= fifoFrom).length;
  const overtaken: Overtake[] = [];
  let latestCaller: Entry | undefined;
  for (const entry of compared) {
    const ms = latestCaller ? arrived(latestCaller) - arrived(entry) : 0;
    if (latestCaller && entry.asked >= fifoFrom && ms >= FIFO_SLACK_MS) overtaken.push({ entry, by: latestCaller, ms });
    if (!latestCaller || arrived(entry) > arrived(latestCaller)) latestCaller = entry;
  }
  const overtakenShare = fifoJudged === 0 ? 0 : overtaken.length / fifoJudged;
  if (input.maxOvertakenShare !== undefined && overtakenShare > input.maxOvertakenShare) {
    const examples = overtaken
      .slice(0, MAX_LISTED)
      .map((o) => `${show(o.entry)} ${byJoin ? 'queued' : 'asked'} at ${arrived(o.entry).toFixed(1)}, granted after ${show(o.by)} ${byJoin ? 'queued' : 'asked'} ${o.ms.toFixed(1)} ms later`);
    const more = overtaken.length > MAX_LISTED ? ` (and ${overtaken.length - MAX_LISTED} more)` : '';
    problems.push(
      `${overtaken.length} of ${fifoJudged} acquisitions (${percent(overtakenShare)} %) overtaken by a later caller, above the bound of ${percent(input.maxOvertakenShare)} %: ${examples.join('; ')}${more}`,
    );
  }

  const stalls = faults.map((fault) => {
    let next = Number.POSITIVE_INFINITY;
    for (const entry of entries) if (entry.start > fault.at && entry.start < next) next = entry.start;
    return { fault, ms: next - fault.at };
  });

  let longestWaitMs = 0;
  for (const entry of entries) longestWaitMs = Math.max(longestWaitMs, entry.waitMs);
  for (const h of hung) longestWaitMs = Math.max(longestWaitMs, h.waitingMs);

  return {
    acquisitions: entries.length,
    completed: accepted.length,
    overlaps,
    lostLeases: entries.filter((e) => e.lostAt !== null).length,
    staleWrites: entries.filter((e) => e.late?.write === 'stale').length,
    lateWritesAccepted: entries.filter((e) => e.late?.write === 'ok').length,
    longestBeliefAfterHandoverMs: belief,
    longestWaitMs,
    overtaken,
    fifoJudged,
    overtakenShare,
    stalls,
    longestStallMs: stalls.reduce((max, s) => Math.max(max, s.ms), 0),
    hung,
    problems,
  };
}

/** A lost lease as a line: worker, code and why. */
export const lossLine = (e: Entry) => `worker ${e.worker}, token ${e.token}: ${e.lostCode ?? '?'} ${e.lostWhy ?? ''}`.trim();

/**
 * The losses of a run without a fault that its worker's own stall does not explain. A worker whose
 * event loop stalled a renewal period (a third of the lease) or more could not renew in time, and
 * its watchdog rightly gave the lease up: a busy machine (the CI matrix runs two lanes on 2 cores)
 * does that now and then. Every other loss is a false one.
 */
export function unexplainedLosses(entries: readonly Entry[], leaseMs: number): string[] {
  return entries.filter((e) => e.lostAt !== null && !((e.lostStallMs ?? 0) >= leaseMs / 3)).map(lossLine);
}

/** The one-line summary every run prints. */
export function summary(name: string, report: Report, faults: number, extra: readonly string[] = []): string {
  const ms = (value: number) => (Number.isFinite(value) ? `${Math.round(value)} ms` : 'never');
  return [
    `${name}: acquisitions ${report.acquisitions}`,
    `overlaps ${report.overlaps.length}`,
    `faults injected ${faults}`,
    `lost leases signalled ${report.lostLeases}`,
    `longest wait ${ms(report.longestWaitMs)}`,
    `longest stall after a fault ${faults > 0 ? ms(report.longestStallMs) : '-'}`,
    `overtaken ${percent(report.overtakenShare)} % (${report.overtaken.length} of ${report.fifoJudged})`,
    ...extra,
  ].join(', ');
}

// --- The family: semaphore (capacity), read-write lock (modes), multi-lock (members)

/** When a section stopped counting as a holder: its last effect, or its signalled loss if that came first. */
function heldUntil(entry: Entry): number {
  return entry.lostAt !== null ? Math.min(entry.end, entry.lostAt) : entry.end;
}

/**
 * Sections that began while the sections still holding, together with them, weighed more than
 * `capacity`: each reported once, beside the heaviest of those (the longest-held among equals).
 * The largest sum is reached at some start, so checking at every start is enough.
 */
export function excesses(entries: readonly Entry[], weight: (entry: Entry) => number, capacity: number): Overlap[] {
  const overlaps: Overlap[] = [];
  let open: Entry[] = [];
  for (const later of [...entries].sort((a, b) => a.start - b.start)) {
    open = open.filter((entry) => heldUntil(entry) > later.start);
    const sum = open.reduce((total, entry) => total + weight(entry), weight(later));
    if (sum > capacity) {
      const earlier = open.reduce<Entry>((a, b) => (weight(b) > weight(a) || (weight(b) === weight(a) && heldUntil(b) > heldUntil(a)) ? b : a), open[0] ?? later);
      overlaps.push({ earlier, later, ms: Math.min(heldUntil(earlier), heldUntil(later)) - later.start });
    }
    open.push(later);
  }
  return overlaps;
}

/** The largest weight of sections holding at once (that a run really ran sections side by side). */
export function peak(entries: readonly Entry[], weight: (entry: Entry) => number = () => 1): number {
  let most = 0;
  let open: Entry[] = [];
  for (const later of [...entries].sort((a, b) => a.start - b.start)) {
    open = open.filter((entry) => heldUntil(entry) > later.start);
    open.push(later);
    most = Math.max(most, open.reduce((total, entry) => total + weight(entry), 0));
  }
  return most;
}

/** The figures every report has, from every section of the run. */
function figures(input: CheckInput, overlaps: readonly Overlap[], completed: number, staleWrites: number, problems: string[]): Report {
  const { entries } = input;
  const faults = input.faults ?? [];
  const hung = input.hung ?? [];
  if (hung.length > 0) {
    problems.push(`${hung.length} waiters that never got the lock: ${hung.slice(0, MAX_LISTED).map(hungLine).join('; ')}`);
  }
  const stalls = faults.map((fault) => {
    let next = Number.POSITIVE_INFINITY;
    for (const entry of entries) if (entry.start > fault.at && entry.start < next) next = entry.start;
    return { fault, ms: next - fault.at };
  });
  let longestWaitMs = 0;
  for (const entry of entries) longestWaitMs = Math.max(longestWaitMs, entry.waitMs);
  for (const h of hung) longestWaitMs = Math.max(longestWaitMs, h.waitingMs);
  return {
    acquisitions: entries.length,
    completed,
    overlaps,
    lostLeases: entries.filter((e) => e.lostAt !== null).length,
    staleWrites,
    lateWritesAccepted: 0,
    longestBeliefAfterHandoverMs: 0,
    longestWaitMs,
    overtaken: [],
    fifoJudged: 0,
    overtakenShare: 0,
    stalls,
    longestStallMs: stalls.reduce((max, s) => Math.max(max, s.ms), 0),
    hung,
    problems,
  };
}

function listed(what: string, items: readonly string[]): string[] {
  if (items.length === 0) return [];
  const more = items.length > MAX_LISTED ? ` (and ${items.length - MAX_LISTED} more)` : '';
  return [`${items.length} ${what}: ${items.slice(0, MAX_LISTED).join('; ')}${more}`];
}

/**
 * A semaphore run: at no instant may the permits of the sections holding at once exceed `permits`
 * (a section holds `entry.permits`, 1 if unset); each lease has a token of its own; the counter
 * (one INCR per completed section) matches the sections that completed.
 */
export function checkSemaphore(input: CheckInput & { readonly permits: number }): Report {
  const { entries, permits } = input;
  const weight = (entry: Entry) => entry.permits ?? 1;
  const overlaps = excesses(entries, weight, permits);
  const problems = listed(
    `sections beyond the ${permits} permits`,
    overlaps.map((o) => `${show(o.later)} took ${weight(o.later)} permits ${o.ms.toFixed(1)} ms before ${show(o.earlier)} (${weight(o.earlier)} permits) ended, with more than ${permits} held`),
  );
  const tokens = new Map<number, number>();
  for (const entry of entries) tokens.set(entry.token, (tokens.get(entry.token) ?? 0) + 1);
  problems.push(...listed('fencing tokens issued twice', [...tokens].filter(([, n]) => n > 1).map(([token, n]) => `${token} (${n} sections)`)));
  const completed = entries.filter((e) => e.write === 'ok').length;
  // A SIGKILLed worker may have INCRed in sections whose entries it never wrote: at most `permits`
  // sections hold at once, so each kill may leave that many uncounted INCRs; never fewer INCRs.
  const cut = permits * (input.faults ?? []).filter((fault) => fault.kind.startsWith('SIGKILL')).length;
  if (input.counter < completed || input.counter > completed + cut) {
    problems.push(`counter is ${input.counter} but ${completed} sections completed (lost or extra sections${cut > 0 ? `; up to ${cut} cut by kills allowed` : ''})`);
  }
  return figures(input, overlaps, completed, 0, problems);
}

/**
 * A read-write lock run: no write section beside any other section (reads beside reads are fine);
 * the write sections alone pass the lock's check (increasing tokens, the counter's read-modify-write
 * chain, no unsignalled stale write); a reader that read the counter twice saw no write in between.
 */
export function checkReadWrite(input: CheckInput): Report {
  const { entries } = input;
  const writes = entries.filter((e) => e.mode !== 'read');
  // A write counts as the whole capacity: beside it, any other section is one too many.
  const capacity = Math.max(1, entries.length);
  const overlaps = excesses(entries, (e) => (e.mode === 'read' ? 1 : capacity), capacity);
  const problems = listed(
    'sections beside a write',
    overlaps.map((o) => `${o.later.mode} ${show(o.later)} began ${o.ms.toFixed(1)} ms before ${o.earlier.mode} ${show(o.earlier)} ended`),
  );
  const ofWrites = check({ entries: writes, counter: input.counter });
  // Their overlaps are among the ones above.
  problems.push(...ofWrites.problems.filter((p) => !/^\d+ overlapping holds/.test(p)));
  problems.push(
    ...listed(
      'read sections that saw the counter change',
      entries.filter((e) => e.mode === 'read' && e.reread !== undefined && e.reread !== e.read).map((e) => `${show(e)} read ${e.read}, then ${e.reread}`),
    ),
  );
  return figures(input, overlaps, ofWrites.completed, ofWrites.staleWrites, problems);
}

/**
 * A multi-lock run whose sections hold different sets of members: per member, the sections that held
 * it pass the lock's check against that member's counter, with that member's own token (no two
 * sections overlap on a shared member; sections over disjoint members may).
 */
export function checkMulti(input: CheckInput & { readonly counters: Readonly<Record<string, number>> }): Report {
  const { entries } = input;
  const names = [...new Set(entries.flatMap((e) => (e.members ?? []).map((m) => m.name)))].sort();
  const overlaps: Overlap[] = [];
  const problems: string[] = [];
  let completed = 0;
  let staleWrites = 0;
  for (const name of names) {
    const held = entries.flatMap((entry): Entry[] => {
      const member = entry.members?.find((m) => m.name === name);
      if (!member) return [];
      const { late: _late, ...rest } = entry;
      return [{ ...rest, token: member.token, read: member.read, write: member.write, ...(member.late ? { late: member.late } : {}) }];
    });
    const report = check({ entries: held, counter: input.counters[name] ?? 0 });
    overlaps.push(...report.overlaps);
    problems.push(...report.problems.map((p) => `member ${name}: ${p}`));
    completed += report.completed;
    staleWrites += report.staleWrites;
  }
  const without = entries.filter((e) => !e.members || e.members.length === 0);
  problems.push(...listed('sections without members', without.map(show)));
  return figures(input, overlaps, completed, staleWrites, problems);
}

/**
 * The entries with the end of each section whose last storage command was sent before its worker was
 * SIGSTOPped and answered after: that end is the stop. The storage is never faulted, so the command
 * ran there before the stop (what its reply says arrives only after SIGCONT). Only such sections
 * change; a section that acts after its worker resumed still ends when it does.
 */
export function stoppedEnds(entries: readonly Entry[], faults: readonly Fault[]): Entry[] {
  const stops = faults.filter((fault) => fault.kind.startsWith('SIGSTOP') && fault.worker !== undefined);
  if (stops.length === 0) return [...entries];
  return entries.map((entry) => {
    const stop = stops.find((s) => s.worker === entry.worker && entry.sentAt !== undefined && entry.sentAt <= s.at && s.at < entry.end);
    return stop ? { ...entry, end: stop.at } : entry;
  });
}

/** The check of a run of `kind`: the lock's for `lock()` and `fairLock()`, the family's own for the others. */
export function checkKind(kind: LockKind, input: CheckInput & { readonly permits: number; readonly counters: Readonly<Record<string, number>> }): Report {
  const settled = { ...input, entries: stoppedEnds(input.entries, input.faults ?? []) };
  if (kind === 'semaphore') return checkSemaphore(settled);
  if (kind === 'rw-lock') return checkReadWrite(settled);
  if (kind === 'multi-lock') return checkMulti(settled);
  return check(settled);
}

// --- Node faults (issue 17): holds lost on healthy nodes, and holds that no lease owns

/**
 * A section as the node-fault checks see it (test/faults/nodes.ts): the lock names it held, the
 * nodes their keys live on, and how it ended.
 */
export interface NodeSection {
  readonly client: number;
  readonly token: number;
  /** The names it held: one, or a multi-lock's members. */
  readonly names: readonly string[];
  /**
   * Where its keys live: the Cluster masters of its names (by label), or the quorum of a Redlock
   * client (one label for the masters taken together).
   */
  readonly nodes: readonly string[];
  /**
   * Redlock: the masters (by label) found holding it right after it was acquired, and the majority.
   * A lease on a bare majority with a faulted master among it cannot be kept: its loss is no false one.
   */
  readonly heldOn?: { readonly masters: readonly string[]; readonly quorum: number };
  readonly asked: number;
  readonly start: number;
  /** When the holder stopped: its work done (release about to be sent), or its signal aborted. */
  readonly end: number;
  readonly lostAt: number | null;
  /** The `code` of the signal's reason, when it aborted. */
  readonly lostCode?: string;
  /** 'ok', or the `code` (else `name`) release() rejected with. */
  readonly release: string;
  /** When release() settled. */
  readonly releasedAt: number;
  /** Read-write lock: the side; semaphore: the permits. */
  readonly mode?: 'read' | 'write';
  readonly permits?: number;
}

/** What the false-loss check found. */
export interface FalseLosses {
  /** Sections signalled lost (LockLostError) although every node of their keys was healthy the whole run. */
  readonly lost: readonly NodeSection[];
  /** Sections whose release() rejected with LockNotHeldError, not signalled lost, on healthy nodes. */
  readonly refused: readonly NodeSection[];
  /** Sections signalled lost with a key on a faulted node (reported, not a violation). */
  readonly lostOnFaulted: number;
}

/**
 * False losses: a lease signalled lost, or a release refused as not held without a loss signalled,
 * while every node its keys live on was healthy for the whole run (`faulted` lists the nodes a fault
 * touched), and, on Redlock, the healthy masters it was held on were a majority. Nothing but the faulted node went wrong, so such a hold was lost by the client, not by
 * Redis.
 */
export function falseLosses(sections: readonly NodeSection[], faulted: ReadonlySet<string>): FalseLosses {
  const healthy = (section: NodeSection) =>
    section.nodes.every((node) => !faulted.has(node)) &&
    (section.heldOn === undefined || section.heldOn.masters.filter((master) => !faulted.has(master)).length >= section.heldOn.quorum);
  return {
    lost: sections.filter((s) => s.lostAt !== null && s.lostCode === 'ERR_LOCK_LOST' && healthy(s)),
    refused: sections.filter((s) => s.lostAt === null && s.release === 'ERR_LOCK_NOT_HELD' && healthy(s)),
    lostOnFaulted: sections.filter((s) => s.lostAt !== null && !healthy(s)).length,
  };
}

/** An owner found in a lock hash on Redis (a field, or a value such as a read-write lock's `writer`). */
export interface OwnerField {
  readonly node: string;
  readonly key: string;
  /** The lock name (the key's hash tag). */
  readonly name: string;
  /** `<client id>:<hold id>`. */
  readonly owner: string;
  /** The key's PTTL when it was read: -1 when it has no expiry. */
  readonly remainingMs: number;
}

/**
 * Where a client may legitimately have left an owner field behind: a lease of `name` signalled lost,
 * or whose release did not go through, at `at`. Its field lives a lease from then at most. (An
 * acquire that failed excuses nothing: relock gives back whatever its attempt may have taken.)
 */
export interface Unclean {
  readonly clientId: string;
  readonly name: string;
  readonly at: number;
}

/** An owner field's lease may end up to this much later than the event that excuses it predicts (timer and clock rounding). */
export const PHANTOM_SLACK_MS = 50;

/**
 * Holds that no lease owns: owner fields still in Redis when read at `at` (with no lease alive, or
 * with the leases in `live`, as `<client id> <name>`, alive), unless a lease of that client on that
 * name ended uncleanly (`unclean`) recently enough that its lease, `leaseMs` from then, has not run
 * out yet. A field whose client released every lease of the name cleanly is a
 * phantom whatever its PTTL; so is one that outlives every excuse, or has no expiry.
 */
export function phantomHolds(
  fields: readonly OwnerField[],
  unclean: readonly Unclean[],
  options: { readonly at: number; readonly leaseMs: number; readonly live?: ReadonlySet<string> },
): OwnerField[] {
  const excusedUntil = new Map<string, number>();
  for (const u of unclean) {
    const key = `${u.clientId} ${u.name}`;
    excusedUntil.set(key, Math.max(excusedUntil.get(key) ?? Number.NEGATIVE_INFINITY, u.at + options.leaseMs));
  }
  return fields.filter((field) => {
    const clientId = field.owner.slice(0, field.owner.indexOf(':'));
    const key = `${clientId} ${field.name}`;
    if (options.live?.has(key)) return false;
    const until = excusedUntil.get(key);
    if (until === undefined || field.remainingMs < 0) return true;
    return options.at + field.remainingMs > until + PHANTOM_SLACK_MS;
  });
}

/** One round of a count-down latch scenario (latch.test.ts), on one clock (performance.now()). */
export interface LatchRound {
  /** The count the latch was set to. */
  readonly count: number;
  /** When each count-down was called, in order. */
  readonly calls: readonly number[];
  /** When a count-down answered 0 (or a rejected one left the count at 0); null when it never did. */
  readonly openedAt: number | null;
  /** When each waiter's wait() resolved; null when it did not within the round (or rejected). */
  readonly released: readonly (number | null)[];
  readonly started: number;
}

/** What the latch checker found. */
export interface LatchViolations {
  /** Waiters let through before the count-th count-down had even been called (ms: how long before; Infinity: it never was). */
  readonly early: readonly { readonly ms: number; readonly calledBy: number }[];
  /** Waiters not let through within `boundMs` of the count reaching 0 (or in a round that never reached it). */
  readonly stuck: number;
  /** The longest time from the count reaching 0 to a waiter let through. */
  readonly longestWakeMs: number;
}

/**
 * The count-down latch's checker: no waiter returns before `count` count-downs were called (a
 * count-down applied twice, or a wait that returns on a count above 0, shows here), and every
 * waiter returns within `boundMs` of the count reaching 0.
 */
export function latchViolations(rounds: readonly LatchRound[], boundMs: number): LatchViolations {
  const early: { ms: number; calledBy: number }[] = [];
  let stuck = 0;
  let longestWakeMs = 0;
  for (const round of rounds) {
    const calls = [...round.calls].sort((a, b) => a - b);
    const last = calls[round.count - 1] ?? Number.POSITIVE_INFINITY;
    for (const at of round.released) {
      if (at === null) {
        stuck++;
        continue;
      }
      if (at < last) early.push({ ms: last - at, calledBy: calls.filter((call) => call <= at).length });
      if (round.openedAt === null) continue;
      const wakeMs = Math.max(0, at - round.openedAt);
      longestWakeMs = Math.max(longestWakeMs, wakeMs);
      if (wakeMs > boundMs) stuck++;
    }
  }
  return { early, stuck, longestWakeMs };
}

/** One fire of a job in one process: the window it was fired for, and whether it ran there. */
export interface JobFire {
  readonly process: number;
  readonly window: number;
  readonly ran: boolean;
  /** Why it did not run ('held', 'window'), or the error it ended with. */
  readonly reason?: string;
}

/** Windows that ran other than once: none (`missed`), or more than once (`twice`, with how often). */
export interface JobViolations {
  readonly missed: number[];
  readonly twice: { readonly window: number; readonly runs: number }[];
}

/** The checker of the job scenarios: every window in `windows` must have exactly one run. */
export function jobViolations(fires: readonly JobFire[], windows: readonly number[]): JobViolations {
  const runs = new Map<number, number>(windows.map((window) => [window, 0]));
  for (const fire of fires) if (fire.ran) runs.set(fire.window, (runs.get(fire.window) ?? 0) + 1);
  return {
    missed: [...runs].filter(([, n]) => n === 0).map(([window]) => window),
    twice: [...runs].filter(([, n]) => n > 1).map(([window, n]) => ({ window, runs: n })),
  };
}
