// Redlock under faults: 3 masters (private redis-servers), 4 LockClients in this process contending
// for one lock name (watchdog lease 300 ms). Each section is logged with its fencing token, its start
// (acquire resolved) and its end (release sent, or lease.signal aborted, whichever came first); the
// checker finds overlaps and tokens out of order. Faults: kills and partitions (black-holing TCP
// proxies) of a minority, then of a majority. A negative control runs the same loops with a quorum of
// one (each client locking on its own master only) and shows the checker catching the overlaps.
import * as assert from 'uvu/assert';
import { LockClient, type Lease } from '../../src/index.ts';
import { describe, uniqueName } from '../helpers/describe.ts';
import { startProxy, type Proxy } from '../helpers/proxy.ts';
import { startRedis, type RedisServer } from '../helpers/redis.ts';
import { MODE, sized } from './harness.ts';

const LEASE_MS = 300;
const CLIENTS = 4;

/** One holder's section, on one clock (all clients are in this process). */
interface Section {
  readonly client: number;
  readonly token: number;
  readonly start: number;
  /** When the holder stopped: its release was sent, or its signal aborted. */
  readonly end: number;
  readonly lost: boolean;
}

interface RedlockReport {
  readonly acquisitions: number;
  readonly overlaps: readonly (readonly [Section, Section])[];
  /** Sections whose token was not above the token of the section before them. */
  readonly outOfOrder: number;
  readonly lost: number;
  readonly longestWaitMs: number;
}

/** Overlaps and token order of a log of sections: a pure function, so a bad log can be fed to it. */
export function checkSections(sections: readonly Section[], waits: readonly number[]): RedlockReport {
  const sorted = [...sections].sort((a, b) => a.start - b.start);
  const overlaps: [Section, Section][] = [];
  let outOfOrder = 0;
  let latest: Section | undefined;
  for (let i = 0; i < sorted.length; i++) {
    const section = sorted[i]!;
    if (latest && section.start < latest.end) overlaps.push([latest, section]);
    if (i > 0 && section.token <= sorted[i - 1]!.token) outOfOrder++;
    if (!latest || section.end > latest.end) latest = section;
  }
  return {
    acquisitions: sections.length,
    overlaps,
    outOfOrder,
    lost: sections.filter((section) => section.lost).length,
    longestWaitMs: waits.reduce((max, wait) => Math.max(max, wait), 0),
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The loops of one run: each client acquires, works (2-8 ms, or as given), releases, until stopped. */
class Loops {
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

  constructor(clients: readonly LockClient[], name: string, workMs: readonly [number, number] = [2, 8]) {
    this.#workMs = workMs;
    this.#done = clients.map((client, i) => this.#loop(client, i, name));
  }

  async #loop(client: LockClient, index: number, name: string): Promise<void> {
    const lock = client.lock(name);
    while (!this.#stopped) {
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
      this.sections.push({ client: index, token: lease.fencingToken, start, end, lost: lostAt !== undefined });
      await lease.release().catch(() => undefined);
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#done);
  }
}

function summary(name: string, report: RedlockReport, faults: number, errors: Map<string, number>, ms: number): string {
  const failed = [...errors].map(([code, n]) => `${code} ${n}`).join(', ') || '0';
  return (
    `[faults ${MODE}] redlock ${name}: acquisitions ${report.acquisitions}, overlaps ${report.overlaps.length}, tokens out of order ${report.outOfOrder}, ` +
    `faults injected ${faults}, lost leases signalled ${report.lost}, longest wait ${Math.round(report.longestWaitMs)} ms, failed acquires ${failed}, ${(ms / 1000).toFixed(1)} s`
  );
}

describe('faults: Redlock (3 masters)', (it) => {
  let servers: RedisServer[] = [];
  let proxies: Proxy[] = [];
  const clients: LockClient[] = [];
  const client = (redis: string[]) => {
    const made = new LockClient({ redis, leaseMs: LEASE_MS });
    made.on('error', () => undefined);
    clients.push(made);
    return made;
  };
  /** Clients that reach every master through its proxy. */
  const proxied = () => Array.from({ length: CLIENTS }, () => client(proxies.map((proxy) => `redis://${proxy.host}:${proxy.port}`)));

  it.before(async () => {
    servers = await Promise.all([0, 1, 2].map(() => startRedis({ private: true })));
    proxies = await Promise.all(servers.map((server) => startProxy(server)));
  });
  it.after(async () => {
    await Promise.all(clients.map((made) => made.close()));
    await Promise.all(proxies.map((proxy) => proxy.close()));
    await Promise.all(servers.map((server) => server.stop()));
  });

  /** Runs the loops for `ms` around `faults`, then checks them. */
  const runLoops = async (name: string, made: LockClient[], faults: (loops: Loops) => Promise<number>, workMs?: readonly [number, number]) => {
    const started = performance.now();
    const loops = new Loops(made, uniqueName('faults-redlock'), workMs);
    let injected: number;
    try {
      injected = await faults(loops);
    } finally {
      await loops.stop();
    }
    const report = checkSections(loops.sections, loops.waits);
    console.log(summary(name, report, injected, loops.errors, performance.now() - started));
    return { report, loops };
  };

  it('minority SIGKILL: one master at a time killed, restarted (empty) only after a lease: 0 overlaps, tokens in order', async () => {
    const { report } = await runLoops('minority kill', proxied(), async () => {
      let faults = 0;
      const rounds = sized(2, 12);
      for (let round = 0; round < rounds; round++) {
        await sleep(300);
        const victim = servers[round % 3]!;
        await victim.kill();
        faults++;
        await sleep(LEASE_MS + 150); // the Redlock rule: a master without persistence rejoins after the longest lease
        await victim.restart();
        // The clients reconnect (their backoff reaches 1 s): one master down at a time, as they see it.
        await sleep(round + 1 < rounds ? 1_200 : 300);
      }
      return faults;
    });
    assert.is(report.overlaps.length, 0);
    assert.is(report.outOfOrder, 0);
    assert.ok(report.acquisitions > 50, `${report.acquisitions} acquisitions`);
  }, 60_000);

  it('minority partition: one master black-holed at a time, for 1 s: 0 overlaps', async () => {
    const { report } = await runLoops('minority partition', proxied(), async () => {
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
    });
    assert.is(report.overlaps.length, 0);
    assert.is(report.outOfOrder, 0);
    assert.ok(report.acquisitions > 50, `${report.acquisitions} acquisitions`);
  }, 60_000);

  it('majority SIGKILL: two masters killed while held: the holder signal fires, nobody acquires, 0 overlaps', async () => {
    const { report, loops } = await runLoops('majority kill', proxied(), async (loops) => {
      let faults = 0;
      for (let round = 0; round < sized(1, 4); round++) {
        await sleep(300);
        // A section that has just begun (500-900 ms of work): it outlives the lease's deadline.
        while (loops.active === 0 || performance.now() - loops.lastStart > 50) await sleep(1);
        const victims = [servers[round % 3]!, servers[(round + 1) % 3]!];
        const lostBefore = loops.sections.filter((section) => section.lost).length;
        await Promise.all(victims.map((victim) => victim.kill()));
        faults += 2;
        await sleep(LEASE_MS * 2);
        await Promise.all(victims.map((victim) => victim.restart()));
        await sleep(400);
        assert.ok(loops.sections.filter((section) => section.lost).length > lostBefore, 'a holder at the kill was signalled lost');
      }
      return faults;
    }, [500, 900]);
    assert.is(report.overlaps.length, 0);
    assert.is(report.outOfOrder, 0);
    assert.ok(report.lost >= 1);
    assert.ok((loops.errors.get('ERR_LOCK_NO_QUORUM') ?? 0) > 0, 'acquires during the outage failed with ERR_LOCK_NO_QUORUM');
  }, 60_000);

  it('majority partition: two masters black-holed for 1.5 s while held: the signal fires, 0 overlaps', async () => {
    const { report } = await runLoops('majority partition', proxied(), async (loops) => {
      let faults = 0;
      for (let round = 0; round < sized(1, 4); round++) {
        await sleep(300);
        // A section that has just begun (500-900 ms of work): it outlives the lease's deadline.
        while (loops.active === 0 || performance.now() - loops.lastStart > 50) await sleep(1);
        const cut = [proxies[round % 3]!, proxies[(round + 2) % 3]!];
        for (const proxy of cut) proxy.blackhole();
        faults += 2;
        await sleep(1_500);
        for (const proxy of cut) proxy.pass();
        await sleep(500);
      }
      return faults;
    }, [500, 900]);
    assert.is(report.overlaps.length, 0);
    assert.is(report.outOfOrder, 0);
    assert.ok(report.lost >= 1, 'a holder at the partition was signalled lost');
  }, 60_000);

  it('negative control: a quorum of one (each client on its own master) is caught with overlaps', async () => {
    const alone = servers.map((server) => {
      const made = new LockClient({ redis: server.url, leaseMs: LEASE_MS });
      clients.push(made);
      return made;
    });
    const { report } = await runLoops('negative control (quorum of 1)', [...alone, alone[0]!], async () => {
      await sleep(sized(500, 2_000));
      return 0;
    });
    assert.ok(report.overlaps.length > 0, 'the checker finds the overlaps of a broken quorum');
  }, 30_000);
});
