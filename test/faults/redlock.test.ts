// Redlock under faults: 3 masters (private redis-servers), 4 LockClients in this process contending
// for one lock name (watchdog lease 300 ms). Each section is logged with its fencing token, its start
// (acquire resolved) and its end (release sent, or lease.signal aborted, whichever came first); the
// checker finds overlaps and tokens out of order. Faults: kills and partitions (black-holing TCP
// proxies) of a minority, then of a majority; a slow master (its replies 100 ms late) while another
// restarts empty under a holder, where a lease lost by a renewal's answer is a false loss. A negative control runs the same loops with a quorum of
// one (each client locking on its own master only) and shows the checker catching the overlaps.
import * as assert from 'uvu/assert';
import { LockClient } from '../../src/index.ts';
import { describe, uniqueName } from '../helpers/describe.ts';
import { sized } from './harness.ts';
import { around, checked, Loops, majorityKill, majorityPartition, minorityKill, minorityPartition, sleep, slowMaster, startRig, type Rig, type Scenario } from './redlock-loops.ts';

// The loops, the checker, the scenarios and the figures live in redlock-loops.ts, shared with the
// other kinds over Redlock.
export { redlockSummed } from './redlock-loops.ts';

const LEASE_MS = 300;
const CLIENTS = 4;
/** The slow-master scenario's lease: long enough that a loaded machine renews it in time, short enough for several renewals per section. */
const SLOW_LEASE_MS = 1_000;

describe('faults: Redlock (3 masters)', (it) => {
  let rig: Rig;
  it.before(async () => {
    rig = await startRig();
  });
  it.after(() => rig.close());

  /** Runs the loops for `ms` around `faults`, then checks them. */
  const runLoops = async (name: string, made: LockClient[], faults: Scenario, workMs?: readonly [number, number], counted = true, leaseMs = LEASE_MS) => {
    const started = performance.now();
    const lockName = uniqueName('faults-redlock');
    const loops = new Loops(made, (client) => client.lock(lockName), workMs);
    const ran = await around(rig, loops, () => loops.stop(), faults, leaseMs, started);
    // Into the run's total, but for the negative control (its overlaps are the point).
    return { report: checked(loops, 'redlock', name, ran, counted ? 'redlock lock' : undefined), loops };
  };

  it('minority SIGKILL: one master at a time killed, restarted (empty) only after a lease: 0 overlaps, tokens in order', async () => {
    const { report } = await runLoops('minority kill', rig.proxied(CLIENTS, LEASE_MS), minorityKill);
    assert.is(report.overlaps.length, 0);
    assert.is(report.outOfOrder, 0);
    assert.ok(report.acquisitions > 50, `${report.acquisitions} acquisitions`);
  }, 60_000);

  it('minority partition: one master black-holed at a time, for 1 s: 0 overlaps', async () => {
    const { report } = await runLoops('minority partition', rig.proxied(CLIENTS, LEASE_MS), minorityPartition);
    assert.is(report.overlaps.length, 0);
    assert.is(report.outOfOrder, 0);
    assert.ok(report.acquisitions > 50, `${report.acquisitions} acquisitions`);
  }, 60_000);

  it('majority SIGKILL: two masters killed while held: the holder signal fires, nobody acquires, 0 overlaps', async () => {
    const kills = { rounds: 0, signalled: 0 };
    const { report, loops } = await runLoops('majority kill', rig.proxied(CLIENTS, LEASE_MS), majorityKill(kills), [500, 900]);
    assert.is(kills.signalled, kills.rounds, 'a holder at each kill was signalled lost');
    assert.is(report.overlaps.length, 0);
    assert.is(report.outOfOrder, 0);
    assert.ok(report.lost >= 1);
    // A 2 s wait rides out a 0.6 s outage; one that ends in it names the cause: no quorum, never a bare
    // "unreachable" nor anything else.
    for (const code of loops.errors.keys()) assert.ok(code === 'ERR_LOCK_NO_QUORUM' || code === 'ERR_LOCK_TIMEOUT', `failed acquires: ${[...loops.errors].join(', ')}`);
  }, 60_000);

  it('majority partition: two masters black-holed for 1.5 s while held: the signal fires, 0 overlaps', async () => {
    const { report } = await runLoops('majority partition', rig.proxied(CLIENTS, LEASE_MS), majorityPartition, [500, 900]);
    assert.is(report.overlaps.length, 0);
    assert.is(report.outOfOrder, 0);
    assert.ok(report.lost >= 1, 'a holder at the partition was signalled lost');
  }, 60_000);

  it('slow master: one master answering 100 ms late while another restarts empty under a holder: 0 overlaps, no lease lost by a renewal\'s answer', async () => {
    // Sections of 400-700 ms outlive several renewals (every 333 ms) of a 1 s lease.
    const { report } = await runLoops('slow master', rig.proxied(CLIENTS, SLOW_LEASE_MS), slowMaster, [400, 700], true, SLOW_LEASE_MS);
    assert.is(report.overlaps.length, 0);
    assert.is(report.outOfOrder, 0);
    assert.is(report.lostByAnswer, 0, `${report.lostByAnswer} leases signalled lost by a renewal's answer while masters 0 and 2 held them`);
    assert.ok(report.acquisitions > 5, `${report.acquisitions} acquisitions`);
  }, 60_000);

  it('negative control: a quorum of one (each client on its own master) is caught with overlaps', async () => {
    const alone = rig.servers.map((server) => rig.adopt(new LockClient({ redis: server.url, leaseMs: LEASE_MS })));
    const { report } = await runLoops(
      'negative control (quorum of 1)',
      [...alone, alone[0]!],
      async () => {
        await sleep(sized(500, 2_000));
        return 0;
      },
      undefined,
      false,
    );
    assert.ok(report.overlaps.length > 0, 'the checker finds the overlaps of a broken quorum');
  }, 30_000);
});
