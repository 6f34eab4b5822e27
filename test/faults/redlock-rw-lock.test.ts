// The Redlock read-write lock under faults: 3 masters (private redis-servers) behind TCP proxies, 4
// LockClients in this process looping over one client.readWriteLock() name (watchdog lease 300 ms),
// 70 % of sections reads. Each section is logged with its side, its fencing token, its start and its
// end (release sent, or lease.signal aborted); the checker (redlock-loops.ts) counts an overlap when a
// write section ran beside any other section, and a token out of order when a write's is not above
// every earlier section's, or a read's not above every earlier write's. Faults: kills and partitions
// of a minority, then of a majority (the holder's signal must fire).
import * as assert from 'uvu/assert';
import type { LockClient } from '../../src/index.ts';
import { describe, uniqueName } from '../helpers/describe.ts';
import {
  around,
  checked,
  checkSections,
  Loops,
  majorityKill,
  majorityPartition,
  minorityKill,
  minorityPartition,
  startRig,
  type Rig,
  type Scenario,
  type Section,
} from './redlock-loops.ts';

const LEASE_MS = 300;
const CLIENTS = 4;
const READ_RATIO = 0.7;

describe('faults: Redlock read-write lock checker', (it) => {
  const section = (client: number, start: number, end: number, token: number, write: boolean): Section => ({ client, start, end, token, write, lost: false });

  it('passes reads that overlap each other, in any token order among themselves', () => {
    const report = checkSections([section(0, 0, 10, 5, false), section(1, 2, 12, 3, false), section(2, 12, 20, 9, true), section(3, 21, 30, 10, false)], []);
    assert.is(report.overlaps.length, 0);
    assert.is(report.outOfOrder, 0);
  });

  it('counts a write beside a read, beside a write, and inside a long read; and tokens out of order', () => {
    const report = checkSections(
      [
        section(0, 0, 100, 1, false), // a long read
        section(1, 50, 60, 2, true), // a write inside it
        section(2, 110, 120, 3, true),
        section(3, 115, 130, 4, true), // a write beside a write
        section(0, 140, 150, 2, false), // a read after the writes, with a token below theirs
        section(1, 160, 170, 5, true),
      ],
      [1, 7],
    );
    assert.is(report.overlaps.length, 2);
    assert.equal(
      report.overlaps.map(([a, b]) => [a.client, b.client]),
      [
        [0, 1],
        [2, 3],
      ],
    );
    assert.is(report.outOfOrder, 1);
    assert.is(report.longestWaitMs, 7);
  });
});

describe('faults: Redlock read-write lock (3 masters, 70 % reads)', (it) => {
  let rig: Rig;
  it.before(async () => {
    rig = await startRig();
  });
  it.after(() => rig.close());

  /** Runs the loops around `scenario`, checks them, and records the run into the fault total. */
  const run = async (name: string, scenario: Scenario, workMs?: readonly [number, number]) => {
    const started = performance.now();
    const lockName = uniqueName('faults-redlock-rw');
    const pick = (client: LockClient) => {
      const rw = client.readWriteLock(lockName);
      return Math.random() < READ_RATIO ? { lock: rw.readLock(), write: false } : { lock: rw.writeLock(), write: true };
    };
    const loops = new Loops(rig.proxied(CLIENTS, LEASE_MS), pick, workMs);
    const report = checked(loops, 'redlock rw-lock', name, await around(rig, loops, () => loops.stop(), scenario, LEASE_MS, started), 'redlock rw-lock');
    assert.is(report.overlaps.length, 0, `overlaps: ${JSON.stringify(report.overlaps.slice(0, 2))}`);
    assert.is(report.outOfOrder, 0);
    return { report, loops };
  };

  it('minority SIGKILL: one master at a time killed, restarted (empty) after a lease: 0 overlaps, tokens in order, reads and writes', async () => {
    const { report, loops } = await run('minority kill', minorityKill);
    assert.ok(report.acquisitions > 50, `${report.acquisitions} acquisitions`);
    assert.ok(loops.sections.some((section) => section.write) && loops.sections.some((section) => !section.write), 'both sides held');
  }, 60_000);

  it('minority partition: one master black-holed at a time, for 1 s: 0 overlaps', async () => {
    const { report } = await run('minority partition', minorityPartition);
    assert.ok(report.acquisitions > 50, `${report.acquisitions} acquisitions`);
  }, 60_000);

  it('majority SIGKILL: two masters killed while held: the holder signal fires, 0 overlaps', async () => {
    const kills = { rounds: 0, signalled: 0 };
    const { report, loops } = await run('majority kill', majorityKill(kills), [500, 900]);
    assert.is(kills.signalled, kills.rounds, 'a holder at each kill was signalled lost');
    assert.ok(report.lost >= 1);
    // A 2 s wait rides out a 0.6 s outage; one that ends in it names the cause: no quorum, never a bare
    // "unreachable" nor anything else.
    for (const code of loops.errors.keys()) assert.ok(code === 'ERR_LOCK_NO_QUORUM' || code === 'ERR_LOCK_TIMEOUT', `failed acquires: ${[...loops.errors].join(', ')}`);
  }, 60_000);

  it('majority partition: two masters black-holed for 1.5 s while held: the signal fires, 0 overlaps', async () => {
    const { report } = await run('majority partition', majorityPartition, [500, 900]);
    assert.ok(report.lost >= 1, 'a holder at the partition was signalled lost');
  }, 60_000);
});
