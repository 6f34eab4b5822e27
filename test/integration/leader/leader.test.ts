// Leader election beyond the contract: epochs keep going up across a Redis restart that lost every
// key; a term is not ended by garbage collection (a leader leads until it resigns); the default
// candidate tells processes apart; a closed client's term ends with its lease; a Redlock client and
// the Redisson layout refuse elections before any I/O.
import * as assert from 'uvu/assert';
import { hostname } from 'node:os';
import { LockError, LockLostError } from '../../../src/index.ts';
import { leaderKeys } from '../../../src/leader/keys.ts';
import { describe, eventually, uniqueName, within } from '../../helpers/describe.ts';
import { setup, sleep } from '../../helpers/fixture.ts';
import { collectUntil } from '../../helpers/gc.ts';
import { assertRelockLayoutOnly, setupMasters } from '../redlock/masters.ts';

describe('leader: on one private server', (it) => {
  const s = setup(it, {}, {}, { private: true });

  it('never repeats or lowers an epoch across a restart that lost every key (no persistence)', async () => {
    const name = uniqueName('leader');
    const epochs: number[] = [];
    for (let i = 0; i < 3; i++) {
      const term = await s.client.leader(name).campaign();
      epochs.push(term.epoch);
      await term.resign();
    }
    const server = s.f.deployment.nodes[0]!;
    await server.kill();
    await server.restart();
    await eventually(async () => (await s.f.admin.ping().catch(() => '')) === 'PONG', 'the server back');
    assert.is(await s.f.admin.exists(leaderKeys('relock', name).fence), 0, 'the epoch key was lost');
    const after = await within(s.other.leader(name).campaign(), 10_000, 'a campaign after the restart');
    epochs.push(after.epoch);
    await after.resign();
    for (let i = 1; i < epochs.length; i++) assert.ok(epochs[i]! > epochs[i - 1]!, `epochs ${epochs.join(', ')}`);
  });

  it('keeps a term whose object was dropped: a leader leads until it resigns, not until it is collected', async () => {
    const name = uniqueName('leader');
    const client = s.f.client();
    const warnings: string[] = [];
    client.on('warning', (warning) => warnings.push(warning.code));
    let signal: AbortSignal | undefined;
    await (async () => {
      const term = await client.leader(name, { leaseMs: 1_000 }).campaign();
      signal = term.signal;
    })();
    // Nothing of the caller's refers to the term now (only its signal): collections, then two leases and a half.
    await collectUntil(() => false, 10);
    await sleep(2_500);
    assert.not.ok(signal!.aborted, 'still leading after two leases and a half');
    assert.ok((await s.other.leader(name).current()) !== null);
    assert.equal(warnings, []);
    await client.close();
    await eventually(() => signal!.aborted, 'the term ends with its client');
    assert.instance(signal!.reason, LockLostError);
    assert.match((signal!.reason as Error).message, 'closed');
  });

  it("checks a term's deadline when its signal is read: after a long block, before the watchdog's timer ran", async () => {
    const term = await s.client.leader(uniqueName('leader'), { leaseMs: 300 }).campaign();
    assert.not.ok(term.signal.aborted);
    const until = performance.now() + 500;
    while (performance.now() < until) {
      // A synchronous block longer than the lease (a stop-the-world pause): no timer can run.
    }
    assert.ok(term.signal.aborted, 'aborted when read, at once');
    assert.instance(term.signal.reason, LockLostError);
    await term.resign();
  });

  it('warns of no self-wait when two candidates of one client wait for each other (they do by design)', async () => {
    const client = s.f.client({ leaseMs: 300 });
    const warnings: string[] = [];
    client.on('warning', (warning) => warnings.push(warning.code));
    const name = uniqueName('leader');
    const first = await client.leader(name).campaign();
    const error = await client.leader(name).campaign({ waitMs: 900 }).catch((e: unknown) => e);
    assert.is((error as LockError).code, 'ERR_LOCK_TIMEOUT', 'waited three leases');
    assert.equal(warnings, []);
    await first.resign();
    await client.close();
  });

  it('names its candidate <hostname>:<pid> unless told', async () => {
    const name = uniqueName('leader');
    const term = await s.client.leader(name).campaign();
    assert.is(term.candidate, `${hostname()}:${process.pid}`);
    assert.is((await s.other.leader(name).current())?.candidate, term.candidate);
    await term.resign();
  });
});

describe('leader: refused where a term cannot be observed', (it) => {
  const masters = setupMasters(it, 3);

  it('on a Redlock client and in the Redisson layout, with ERR_LOCK_UNSUPPORTED, before any I/O', async () => {
    await assertRelockLayoutOnly(masters, 'leader', (client) => client.leader('scheduler'));
  });
});
