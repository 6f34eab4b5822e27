// Node faults on a Redlock client (issue 17), for every kind: "one master frozen", a minority of the
// 3 masters silent while its connections stay open (its TCP proxy black-holes every byte; in full mode
// also SIGSTOP of that master), for a few seconds while 5 clients hold and contend locks. The other
// two masters are a majority the whole time, so no hold they both keep may be lost: a signalled loss
// is a false one unless the lease was held on master 0 and only one other (contention leaves some
// leases on a bare majority: the checker reads where each one is held right after its acquire), and
// so is a release refused as not held without a loss. After the run, every lease
// released and the clients closed, no master may keep an owner field that no lease owns (a phantom
// hold). The loops and checks are nodes.ts's; their negative controls run in node-cluster.test.ts.
import * as assert from 'uvu/assert';
import { LockClient } from '../../src/index.ts';
import { describe } from '../helpers/describe.ts';
import { MODE, sized } from './harness.ts';
import { KINDS, nodeRun, violations, type Injected, type Topology } from './nodes.ts';
import type { LockKind } from './protocol.ts';
import { startRig, type Rig } from './redlock-loops.ts';

const LEASE_MS = 1_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let rig: Rig;
let topology: Topology;

/** Master 0 silent `rounds` times for `ms`, `gapMs` apart, by its proxy (black hole) or by SIGSTOP; back whatever happens. */
function silence(how: 'black hole' | 'SIGSTOP', rounds: number, ms: number, gapMs: number): () => Promise<Injected> {
  return async () => {
    let faults = 0;
    for (let round = 0; round < rounds; round++) {
      if (how === 'black hole') rig.proxies[0]!.blackhole();
      else rig.servers[0]!.pause();
      faults++;
      try {
        await sleep(ms);
      } finally {
        if (how === 'black hole') rig.proxies[0]!.pass();
        else rig.servers[0]!.resume();
      }
      if (round + 1 < rounds) await sleep(gapMs);
    }
    // The quorum's two other masters stay a healthy majority: only a lease held on master 0 and one other is excused.
    return { faulted: new Set(['master 0']), faults, notes: [`master 0 of 3 ${how === 'black hole' ? 'black-holed (connections open)' : 'SIGSTOPped'} ${faults} x ${ms} ms`] };
  };
}

// Full mode only (npm run test:faults): 10 runs of 15 s do not fit npm test's budget. Stop 16 counted
// false losses here in 2 of 5 runs, each a lease lost at its first renewal: leases held on master 0 and
// one other (contention leaves some on a bare majority), which cannot be kept while master 0 is silent.
// The checker now reads where each lease is held (heldOnMasters) and excuses exactly those.
if (MODE === 'full') describe('faults: one Redlock master frozen (a silent minority)', (it) => {
  it.before(async () => {
    rig = await startRig();
    topology = {
      label: 'redlock',
      nodes: ['quorum'],
      nodeOf: () => 'quorum',
      client: (prefix, leaseMs) => new LockClient({ redis: rig.proxies.map((proxy) => `redis://${proxy.host}:${proxy.port}`), prefix, leaseMs }),
      masters: rig.servers.map((server, i) => ({ label: `master ${i}`, connection: server.connect() })),
      quorum: true,
    };
  });
  it.after(async () => {
    if (!rig) return;
    rig.proxies[0]!.pass();
    rig.servers[0]!.resume();
    await rig.close();
  });

  const run = (how: 'black hole' | 'SIGSTOP', kinds: readonly LockKind[]) =>
    nodeRun(topology, {
      scenario: `one master frozen (${how})`,
      kinds,
      leaseMs: LEASE_MS,
      clients: 5,
      warmMs: 300,
      fault: silence(how, sized(1, 3), sized(2_000, 3_000), 1_500),
      settleMs: sized(700, 1_500),
    });

  for (const how of ['black hole', 'SIGSTOP'] as const) {
    for (const kind of KINDS) {
      it(`one master of 3 frozen (${how}, 3 x 3 s): ${kind}: no overlap, no false loss, no phantom hold`, async () => {
        assert.equal(violations(await run(how, [kind])), []);
      }, 90_000);
    }
  }
});
