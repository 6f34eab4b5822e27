// The watchdog on a Redlock client of 3 masters whose fair-lock gate master is frozen (SIGSTOP: its
// connections stay open and silent): the gate's hold goes unrenewed, but every quorum hold is renewed
// on the healthy majority, so no lease is signalled lost, and releases settle without waiting for
// the frozen master.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import * as assert from 'uvu/assert';
import { LockError, type RenewMessage } from '../../../src/index.ts';
import { describe, eventually, uniqueName, within } from '../../helpers/describe.ts';
import { setupMasters, type Masters } from './masters.ts';

/** Long enough that a loaded host renews in time (rounds every 667 ms, lost 1.8 s after the last renewal sent). */
const LEASE_MS = 2_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The gate: the master first by host:port (when none is down). */
function gateOf(m: Masters): number {
  const label = (i: number) => `${m.servers[i]!.host}:${m.servers[i]!.port}`;
  return m.servers.map((_, i) => i).sort((a, b) => (label(a) < label(b) ? -1 : 1))[0]!;
}

describe('Watchdog on a Redlock client (3 masters)', (it) => {
  const m = setupMasters(it, 3);

  it('signals no loss on the healthy majority while the fair lock gate is frozen, and releases settle', async () => {
    const client = m.client({ leaseMs: LEASE_MS });
    const fair = await client.fairLock(uniqueName('rl-wd-fair')).acquire();
    const [z, other] = await Promise.all([client.lock(uniqueName('rl-wd-z')).acquire(), client.lock(uniqueName('rl-wd-other')).acquire()]);
    const renewed = new Set<string>();
    const listener = (message: unknown) => {
      for (const name of (message as RenewMessage).names) renewed.add(name);
    };
    subscribe('relock:renew', listener);
    const gate = gateOf(m);
    m.servers[gate]!.pause();
    const pausedAt = performance.now();
    try {
      // A round after the freeze has gone out (the gate's renewal among it) once the quorum holds were
      // renewed again; a release then must not wait for the gate's call.
      renewed.clear();
      await eventually(() => [z, other].every((lease) => renewed.has(lease.name)), 'a renewal round after the freeze', 3_000);
      const startedAt = performance.now();
      await within(other.release(), 2_000, 'the release of another lock');
      const tookMs = performance.now() - startedAt;
      assert.ok(tookMs < 500, `a lock's release settles on the majority in < 500 ms (took ${Math.round(tookMs)} ms)`);
      console.log(`  a lock's release with the gate frozen: ${Math.round(tookMs)} ms`);
      // Until a hold that went unrenewed since the freeze is past its deadline.
      await sleep(Math.max(0, pausedAt + 2 * LEASE_MS - performance.now()));
      for (const lease of [z, fair]) assert.not.ok(lease.signal.aborted, `the lease of "${lease.name}" is kept by the majority (${String(lease.signal.reason)})`);
      await within(z.release(), 2_000, 'the release of z');
      await within(fair.release(), 2_000, 'the release of the fair lock');
    } finally {
      unsubscribe('relock:renew', listener);
      m.servers[gate]!.resume();
    }
  });

  it("cuts the renewal of a frozen gate's holds after 500 ms, as a silent master's, and still signals no loss", async () => {
    // A lease of 3 s: the watchdog's own bound on a call (half the lease, 1.5 s) comes long after the gate's cut.
    const client = m.client({ leaseMs: 3_000 });
    const errors: LockError[] = [];
    client.on('error', (error: Error) => void errors.push(error as LockError));
    const fair = await client.fairLock(uniqueName('rl-wd-cut')).acquire();
    const gate = gateOf(m);
    const label = `${m.servers[gate]!.host}:${m.servers[gate]!.port}`;
    m.servers[gate]!.pause();
    try {
      // The next renewal round is at most 1 s away; its gate call is cut 500 ms after.
      await eventually(() => errors.length > 0, 'a renewal error', 4_000);
      assert.is(errors[0]!.code, 'ERR_LOCK_UNREACHABLE');
      assert.match(errors[0]!.message, `the gate ${label} did not answer the renewal of 1 fair lock hold(s) within 500 ms`);
      assert.not.ok(fair.signal.aborted, 'the lease is the quorum hold: renewed on the majority');
      await within(fair.release(), 2_000, 'the release of the fair lock');
    } finally {
      m.servers[gate]!.resume();
    }
  });
});
