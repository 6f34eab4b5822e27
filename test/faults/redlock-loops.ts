// The pieces of a Redlock fault run any kind can use (test/faults/redlock-rw-lock.test.ts, and the
// other kinds over Redlock): 3 private masters behind TCP proxies, in-process clients looping over
// acquire / work / release on one clock, the checker of their sections (a pure function), the fault
// scenarios (kills and partitions of a minority and of a majority), and the figures the closing
// total sums. A section is exclusive unless it says `write: false` (a read of a read-write lock).
import type { Redis } from 'ioredis';
import type { Lease, Lock } from '../../src/index.ts';
import { LockClient } from '../../src/index.ts';
import { startProxy, type Proxy } from '../helpers/proxy.ts';
import { startRedis, type RedisServer } from '../helpers/redis.ts';
import { MODE, record, sized, type Summed } from './harness.ts';

/** One holder's section, on one clock (all clients are in this process). */
export interface Section {
  readonly client: number;
  readonly token: number;
  readonly start: number;
  /** When the holder stopped: its release was sent, or its signal aborted. */
  readonly end: number;
  readonly lost: boolean;
  /**
   * Why it was lost, when it was: "answer" when a renewal's answer said the majority no longer held it
   * (LockLostError "expired or was force-unlocked while held"), "deadline" when no renewal came back
   * before its lease would end, "other" otherwise.
   */
  readonly lostBy?: 'answer' | 'deadline' | 'other';
  /** Exclusive (true, the default: a lock, a write) or shared with other non-exclusive sections (a read). */
  readonly write?: boolean;
}

/** What the checker found in a run's sections. */
export interface RedlockReport {
  readonly acquisitions: number;
  /** Pairs of sections that ran at once although one of them was exclusive. */
  readonly overlaps: readonly (readonly [Section, Section])[];
  /** Sections whose token was not above the token of every earlier section they exclude (or are excluded by). */
  readonly outOfOrder: number;
  readonly lost: number;
  /**
   * Sections lost by a renewal's answer ("not held by a majority"): in a run whose faults never take
   * a lease from a majority of masters (a slow master, a minority that forgets), each is a held lease
   * falsely lost.
   */
  readonly lostByAnswer: number;
  readonly longestWaitMs: number;
}

const exclusive = (section: Section) => section.write !== false;

/**
 * Overlaps and token order of a log of sections: a pure function, so a bad log can be fed to it. An
 * overlap is an exclusive section that ran beside any other section; a token is out of order when it
 * is not above the tokens of every earlier section that conflicts with it (an exclusive one before
 * any section, any section before an exclusive one). Shared sections may overlap and be in any order
 * among themselves.
 */
export function checkSections(sections: readonly Section[], waits: readonly number[]): RedlockReport {
  const sorted = [...sections].sort((a, b) => a.start - b.start);
  const overlaps: [Section, Section][] = [];
  let outOfOrder = 0;
  /** The section that ends last so far, of all and of the exclusive ones. */
  let latest: Section | undefined;
  let latestWrite: Section | undefined;
  let maxToken = 0;
  let maxWriteToken = 0;
  for (const section of sorted) {
    const other = exclusive(section) ? latest : latestWrite;
    if (other && section.start < other.end) overlaps.push([other, section]);
    if (section.token <= (exclusive(section) ? maxToken : maxWriteToken)) outOfOrder++;
    maxToken = Math.max(maxToken, section.token);
    if (!latest || section.end > latest.end) latest = section;
    if (exclusive(section)) {
      maxWriteToken = Math.max(maxWriteToken, section.token);
      if (!latestWrite || section.end > latestWrite.end) latestWrite = section;
    }
  }
  return {
    acquisitions: sections.length,
    overlaps,
    outOfOrder,
    lost: sections.filter((section) => section.lost).length,
    lostByAnswer: sections.filter((section) => section.lostBy === 'answer').length,
    longestWaitMs: waits.reduce((max, wait) => Math.max(max, wait), 0),
  };
}

/** Why a lease was lost, from its signal's reason (the watchdog's LockLostError wording). */
export function lostCause(reason: unknown): 'answer' | 'deadline' | 'other' {
  const message = reason instanceof Error ? reason.message : String(reason);
  if (/expired or was force-unlocked while held/.test(message)) return 'answer';
  if (/could not be renewed before its lease ended|reached the end of its lease/.test(message)) return 'deadline';
  return 'other';
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What a loop takes next: a lock (exclusive), or a lock and whether its sections exclude others. */
export type Pick = (client: LockClient, index: number) => Lock | { readonly lock: Lock; readonly write: boolean };

/** The loops of one run: each client acquires, works (2-8 ms, or as given), releases, until stopped. */
export class Loops {
  readonly sections: Section[] = [];
  readonly waits: number[] = [];
  readonly errors = new Map<string, number>();
  /** Sections running now. */
  active = 0;
  /** performance.now() when the latest section began. */
  lastStart = 0;
  #stopped = false;
  readonly #done: Promise<void>[];
  readonly #workMs: readonly [number, number];

  constructor(clients: readonly LockClient[], pick: Pick, workMs: readonly [number, number] = [2, 8]) {
    this.#workMs = workMs;
    this.#done = clients.map((client, i) => this.#loop(client, i, pick));
  }

  async #loop(client: LockClient, index: number, pick: Pick): Promise<void> {
    while (!this.#stopped) {
      const picked = pick(client, index);
      const [lock, write] = 'lock' in picked ? [picked.lock, picked.write] : [picked, true];
      const asked = performance.now();
      let lease: Lease;
      try {
        lease = await lock.acquire({ waitMs: 2_000 });
      } catch (error) {
        const code = (error as { code?: string }).code ?? String(error);
        this.errors.set(code, (this.errors.get(code) ?? 0) + 1);
        await sleep(20);
        continue;
      }
      const start = performance.now();
      this.waits.push(start - asked);
      this.active++;
      this.lastStart = start;
      let lostAt: number | undefined;
      lease.signal.addEventListener('abort', () => (lostAt ??= performance.now()), { once: true });
      if (lease.signal.aborted) lostAt = start;
      const [least, most] = this.#workMs;
      await sleep(least + Math.random() * (most - least));
      const end = lostAt ?? performance.now();
      this.active--;
      const lostBy = lostAt === undefined ? undefined : lostCause(lease.signal.reason);
      this.sections.push({ client: index, token: lease.fencingToken, start, end, lost: lostAt !== undefined, ...(lostBy ? { lostBy } : {}), write });
      await lease.release().catch(() => undefined);
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#done);
  }
}

/** A run's figures as the closing total (zz-total.test.ts) sums them. */
export function redlockSummed(kind: string, report: RedlockReport, faults: number, durationMs: number): Summed {
  return {
    kind,
    durationMs,
    faults: { length: faults },
    report: {
      acquisitions: report.acquisitions,
      fifoJudged: 0,
      lostLeases: report.lost,
      longestWaitMs: report.longestWaitMs,
      longestStallMs: 0,
      staleWrites: 0,
      overlaps: { length: report.overlaps.length },
      overtaken: { length: 0 },
    },
  };
}

/** The line a run prints. */
export function summary(kind: string, name: string, report: RedlockReport, faults: number, errors: Map<string, number>, ms: number): string {
  const failed = [...errors].map(([code, n]) => `${code} ${n}`).join(', ') || '0';
  return (
    `[faults ${MODE}] ${kind} ${name}: acquisitions ${report.acquisitions}, overlaps ${report.overlaps.length}, tokens out of order ${report.outOfOrder}, ` +
    `faults injected ${faults}, lost leases signalled ${report.lost} (${report.lostByAnswer} by a renewal's answer), longest wait ${Math.round(report.longestWaitMs)} ms, failed acquires ${failed}, ${(ms / 1000).toFixed(1)} s`
  );
}

/** 3 private masters, a TCP proxy in front of each, and the clients made over them. */
export interface Rig {
  readonly servers: readonly RedisServer[];
  readonly proxies: readonly Proxy[];
  /** `n` clients that reach every master through its proxy (their `error` events swallowed). */
  proxied(n: number, leaseMs: number): LockClient[];
  /** A client of the rig, closed with it. */
  adopt(client: LockClient): LockClient;
  close(): Promise<void>;
}

/** Starts 3 private redis-servers and a TCP proxy in front of each. */
export async function startRig(): Promise<Rig> {
  const servers = await Promise.all([0, 1, 2].map(() => startRedis({ private: true })));
  const proxies = await Promise.all(servers.map((server) => startProxy(server)));
  const clients: LockClient[] = [];
  const adopt = (client: LockClient) => {
    client.on('error', () => undefined);
    clients.push(client);
    return client;
  };
  return {
    servers,
    proxies,
    adopt,
    proxied: (n, leaseMs) => Array.from({ length: n }, () => adopt(new LockClient({ redis: proxies.map((proxy) => `redis://${proxy.host}:${proxy.port}`), leaseMs }))),
    async close() {
      await Promise.all(clients.map((client) => client.close()));
      await Promise.all(proxies.map((proxy) => proxy.close()));
      await Promise.all(servers.map((server) => server.stop()));
    },
  };
}

/** A scenario: the faults it injects while the loops run; resolves with how many. */
export type Scenario = (rig: Rig, loops: Loops, leaseMs: number) => Promise<number>;

/**
 * Runs `scenario` over `loops` (running since `started`), stops them whatever happens, and returns
 * what the scenario injected and how long the whole run took.
 */
export async function around(rig: Rig, loops: Loops, stop: () => Promise<void>, scenario: Scenario, leaseMs: number, started: number): Promise<{ injected: number; durationMs: number }> {
  let injected: number;
  try {
    injected = await scenario(rig, loops, leaseMs);
  } finally {
    await stop();
  }
  return { injected, durationMs: performance.now() - started };
}

/**
 * A run of exclusive (or read-write) sections: checked, its summary line printed, and (unless
 * `recorded` is undefined: a negative control, a contrast) counted in the fault total as that kind.
 */
export function checked(loops: Loops, label: string, name: string, ran: { injected: number; durationMs: number }, recorded: string | undefined): RedlockReport {
  const report = checkSections(loops.sections, loops.waits);
  console.log(summary(label, name, report, ran.injected, loops.errors, ran.durationMs));
  if (recorded) record(redlockSummed(recorded, report, ran.injected, ran.durationMs));
  return report;
}

/** Waits for a section that has just begun (with work of 500-900 ms, it outlives the lease's deadline). */
async function freshSection(loops: Loops): Promise<void> {
  while (loops.active === 0 || performance.now() - loops.lastStart > 50) await sleep(1);
}

/** One master at a time SIGKILLed, restarted (empty) only after a lease (the Redlock rule). */
export const minorityKill: Scenario = async ({ servers }, _loops, leaseMs) => {
  let faults = 0;
  const rounds = sized(2, 12);
  for (let round = 0; round < rounds; round++) {
    await sleep(300);
    const victim = servers[round % 3]!;
    await victim.kill();
    faults++;
    await sleep(leaseMs + 150);
    await victim.restart();
    // The clients reconnect (their backoff reaches 1 s): one master down at a time, as they see it.
    await sleep(round + 1 < rounds ? 1_200 : 300);
  }
  return faults;
};

/** One master at a time black-holed for 1 s. */
export const minorityPartition: Scenario = async ({ proxies }) => {
  let faults = 0;
  for (let round = 0; round < sized(2, 8); round++) {
    await sleep(300);
    const proxy = proxies[round % 3]!;
    proxy.blackhole();
    faults++;
    await sleep(1_000);
    proxy.pass();
  }
  await sleep(300);
  return faults;
};

/**
 * Two masters SIGKILLed while a section that has just begun runs, restarted after two leases; resolves
 * with the faults, and `lostAtKills` counts the kills after which a holder was signalled lost.
 */
export function majorityKill(lostAtKills: { rounds: number; signalled: number }): Scenario {
  return async ({ servers }, loops, leaseMs) => {
    let faults = 0;
    for (let round = 0; round < sized(1, 4); round++) {
      await sleep(300);
      await freshSection(loops);
      const victims = [servers[round % 3]!, servers[(round + 1) % 3]!];
      const lostBefore = loops.sections.filter((section) => section.lost).length;
      await Promise.all(victims.map((victim) => victim.kill()));
      faults += 2;
      await sleep(leaseMs * 2);
      await Promise.all(victims.map((victim) => victim.restart()));
      await sleep(400);
      lostAtKills.rounds++;
      if (loops.sections.filter((section) => section.lost).length > lostBefore) lostAtKills.signalled++;
    }
    return faults;
  };
}

/** Two masters black-holed for 1.5 s while a section that has just begun runs. */
export const majorityPartition: Scenario = async ({ proxies }, loops) => {
  let faults = 0;
  for (let round = 0; round < sized(1, 4); round++) {
    await sleep(300);
    await freshSection(loops);
    const cut = [proxies[round % 3]!, proxies[(round + 2) % 3]!];
    for (const proxy of cut) proxy.blackhole();
    faults += 2;
    await sleep(1_500);
    for (const proxy of cut) proxy.pass();
    await sleep(500);
  }
  return faults;
};

/** Whether some lock hash on master `a` has an owner field that master `c` has too (a hold on both). */
async function heldOnBoth(a: Redis, c: Redis): Promise<boolean> {
  for (const key of await a.keys('relock:{*}')) {
    if ((await a.type(key)) !== 'hash') continue;
    const there = new Set(await c.hkeys(key));
    if ((await a.hkeys(key)).some((owner) => there.has(owner))) return true;
  }
  return false;
}

/**
 * A slow master: master 2 answers 100 ms late (its proxy delays every reply) for the whole run, and
 * while a section that has just begun runs, held on masters 0 and 2, master 1 restarts empty (it
 * forgets every hold at once, as a master without persistence does). The holder's lease then lives
 * on masters 0 and 2, a majority, and each renewal needs master 2's late "renewed": a lease lost by a
 * renewal's answer is lost falsely. (A hold taken on masters 1 and 2 only would be truly lost by the
 * restart: such a section is let go by, and the next one waited for.) Restarting at once is safe:
 * every majority includes master 0 or 2.
 */
export const slowMaster: Scenario = async ({ proxies, servers }, loops) => {
  let faults = 1;
  const [a, c] = [servers[0]!.connect(), servers[2]!.connect()];
  proxies[2]!.delay(0, 100);
  try {
    for (let round = 0, tries = 0; round < sized(2, 8) && tries < sized(20, 80); tries++) {
      await sleep(300);
      await freshSection(loops);
      if (!(await heldOnBoth(a, c))) continue;
      await servers[1]!.kill();
      await servers[1]!.restart();
      faults++;
      round++;
      await sleep(1_000);
    }
  } finally {
    proxies[2]!.pass();
    a.disconnect();
    c.disconnect();
  }
  return faults;
};
