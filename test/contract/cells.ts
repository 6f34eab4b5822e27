// The contract matrix: ONE table of every contract cell, kind x topology x layout, each naming its
// suite (lockContract, semaphoreContract, latchContract) and its options. The test files of
// test/contract/ (one per kind for one server and Redlock, one for the Cluster column) and
// test/layouts/redisson.test.ts are one line each, runCells(), which runs the cells of the table that
// name that file (fileOf), so that test/run.ts's workers still share them out a file at a time. The
// client family and the server come from the environment (RELOCK_TEST_CLIENT, RELOCK_SERVER), as for
// every suite; RELOCK_CONTRACT_CELLS picks some rows (picked() below).
//
// A cell that cannot apply where it runs is switched off here with its reason (printed as not
// applicable), and a test of a suite that cannot apply to a topology by an option of that suite;
// never by editing the suite. What a cell's topology offers:
// - one server: a redis-server of its own per cell.
// - Cluster: 3 masters (helpers/cluster.ts), one per file, lent to the file's Cluster cells in turn.
// - Redlock: 3 private masters per cell, kept after the suite for the cell's `afterwards` tests.
import * as assert from 'uvu/assert';
import { basename, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LockClient, type Lock } from '../../src/index.ts';
import { SHARDED_PUBSUB } from '../helpers/cluster.ts';
import { each, shared, startDeployment, type Deployment, type Topology } from '../helpers/deployment.ts';
import { describe, eventually } from '../helpers/describe.ts';
import { fixtureOn } from '../helpers/fixture.ts';
import { latchContract } from './latch-contract.ts';
import { leaderContract } from './leader-contract.ts';
import { lockContract, type LockContractOptions } from './lock-contract.ts';
import { semaphoreContract } from './semaphore-contract.ts';

export type Layout = 'relock' | 'redisson';
type Kind = 'lock' | 'fairLock' | 'writeLock' | 'readLock' | 'multiLock' | 'semaphore' | 'latch' | 'leader';
type Suite = 'lockContract' | 'semaphoreContract' | 'latchContract' | 'leaderContract';

/** Each kind: how the suites name it, the file that runs its cells, and (a Lock) the lock of a name on a client. */
const KINDS: Record<Kind, { readonly label: string; readonly file: string; readonly lock?: (client: LockClient, name: string) => Lock }> = {
  lock: { label: 'client.lock()', file: 'lock', lock: (client, name) => client.lock(name) },
  fairLock: { label: 'client.fairLock()', file: 'fair-lock', lock: (client, name) => client.fairLock(name) },
  writeLock: { label: 'client.readWriteLock().writeLock()', file: 'rw-lock', lock: (client, name) => client.readWriteLock(name).writeLock() },
  readLock: { label: 'client.readWriteLock().readLock()', file: 'rw-lock', lock: (client, name) => client.readWriteLock(name).readLock() },
  // Two members given in the reverse of their name order (the multi-lock sorts them), on one client;
  // on a Cluster their keys sit in two slots (most often on two masters).
  multiLock: { label: 'client.multiLock()', file: 'multi-lock', lock: (client, name) => client.multiLock([client.lock(`${name}:b`), client.lock(`${name}:a`)]) },
  semaphore: { label: 'client.semaphore() with one permit', file: 'semaphore' },
  latch: { label: 'client.countDownLatch()', file: 'latch' },
  leader: { label: 'client.leader()', file: 'leader' },
};

const WHERE: Record<Topology, string> = { server: '', cluster: ' on a Redis Cluster', redlock: ' on a Redlock client of 3 masters' };

export interface Cell {
  readonly kind: Kind;
  readonly topology: Topology;
  readonly layout: Layout;
  readonly suite: Suite;
  /** lockContract's options (lock-contract.ts); its clients' layout and servers come from the cell. */
  readonly options?: Omit<LockContractOptions, 'clientOptions' | 'servers'>;
  /** Why the cell cannot run here (it is then listed as not applicable), or undefined. */
  readonly unless?: () => string | undefined;
  /** Tests of what the suite left on its servers, run after it (its clients closed) on the same servers. */
  readonly afterwards?: readonly { readonly title: string; readonly test: (deployment: Deployment) => Promise<void> }[];
}

// --- Options shared by several rows

// A fair waiter's client heartbeats its queue entries every 200 ms: at most 3 script calls in the
// contract's 500 ms of sleep, whatever the number of waiters (one call per client and lock).
const FAIR = { idleWaitCalls: 3 } as const;
// Readers share by design, so the tests of two holders of one kind excluding each other cannot apply
// to the read side; the waiting tests (timeout, abort, wake-up, resubscribe, crashed holder, close,
// forceUnlock) run with the write side of the same name as the holder that keeps it out.
const READ = { blocker: (client: LockClient, name: string) => client.readWriteLock(name).writeLock() } as const;
// The multi-lock reports its members' names joined. The whole contract applies: nothing is skipped.
const MULTI = { expectedName: (name: string) => `${name}:b,${name}:a` } as const;
// A Redlock lock's clients share connections passed in (as an application would): close() leaves them
// open, so what an acquire cut short by close() took is given back over them.
const SHARED = { shareConnections: true } as const;
// A Redlock lock() waiter does not poll, yet its tries after it queued may land in the contract's
// 500 ms of sleep: the try after it subscribed stops at the gate master (1 script call; once more
// when the 100 ms timer fires a shade early by the attempt's clock), then, not woken, it asks every
// master once (3) and gives back what a free minority master gave it (1), since the gate may keep a
// stale key that no release clears (docs/redlock.md, "gate"); then it sleeps until the holder's lease
// would end. Counted over the masters (MONITOR): 4 calls most often, 5 at times; at most 6.
const RECHECK = { idleWaitCalls: 6 } as const;
// The fair lock on a Cluster counts the receivers of its grants, which only SPUBLISH does (Redis 7+).
const SHARDED = () => (SHARDED_PUBSUB ? undefined : 'sharded pub/sub');

// --- What a Redlock cell left on its masters

const NO_PARTIAL_LOCK = {
  title: "left no partial hold behind: every lock still held (a closed client's, until its lease ends) is on every master, with one owner",
  async test({ admins }: Deployment) {
    const [first, ...others] = admins;
    const keys = new Set<string>();
    for (const admin of admins) for (const key of await admin.keys('relock:*')) if (!key.endsWith(':fence')) keys.add(key);
    assert.ok(keys.size < 10, `${keys.size} lock keys left`);
    for (const key of keys) {
      const fields = await first!.hgetall(key);
      assert.is(Object.keys(fields).length, 1, `${key} on master 0: ${JSON.stringify(fields)}`);
      for (const admin of others) assert.equal(await admin.hgetall(key), fields, `${key} is the same on every master`);
    }
  },
};
const ONLY_FAIR_KEYS = {
  title: "never wrote client.lock(name)'s keys: only the quorum lock's (fair-quorum) and the gate's queue",
  async test({ admins }: Deployment) {
    for (const admin of admins) {
      const keys = await admin.keys('relock:*');
      assert.ok(keys.length > 0, 'the suite left fences at least');
      const plain = keys.filter((key) => !key.startsWith('relock:fair-quorum:') && !/:fair(:|$)/.test(key));
      assert.equal(plain, [], 'keys of client.lock()');
    }
  },
};
const NO_PARTIAL_RW_HOLD = {
  title: "left no partial hold behind: every hold still there (a closed client's, until its lease ends) is on every master",
  async test({ admins }: Deployment) {
    const holds = async (admin: (typeof admins)[number]) => {
      const members: string[] = [];
      for (const key of await admin.keys('relock:*:rw:leases')) for (const member of await admin.zrange(key, '0', '-1')) members.push(`${key} ${member}`);
      return members.sort();
    };
    // A release settles at a majority: the last master's copy may land a moment later.
    await eventually(async () => new Set((await Promise.all(admins.map(holds))).map((held) => held.join())).size === 1, 'the same holds on every master', 2_000);
    const held = await holds(admins[0]!);
    assert.ok(held.length < 10, `${held.length} holds left`);
  },
};

// --- The table

export const CELLS: readonly Cell[] = [
  // relock's layout: one server
  { kind: 'lock', topology: 'server', layout: 'relock', suite: 'lockContract' },
  { kind: 'fairLock', topology: 'server', layout: 'relock', suite: 'lockContract', options: FAIR },
  { kind: 'writeLock', topology: 'server', layout: 'relock', suite: 'lockContract' },
  { kind: 'readLock', topology: 'server', layout: 'relock', suite: 'lockContract', options: READ },
  { kind: 'multiLock', topology: 'server', layout: 'relock', suite: 'lockContract', options: MULTI },
  { kind: 'semaphore', topology: 'server', layout: 'relock', suite: 'semaphoreContract' },
  { kind: 'latch', topology: 'server', layout: 'relock', suite: 'latchContract' },
  { kind: 'leader', topology: 'server', layout: 'relock', suite: 'leaderContract' },
  // relock's layout: a Redis Cluster of 3 masters
  { kind: 'lock', topology: 'cluster', layout: 'relock', suite: 'lockContract' },
  { kind: 'fairLock', topology: 'cluster', layout: 'relock', suite: 'lockContract', options: FAIR, unless: SHARDED },
  { kind: 'writeLock', topology: 'cluster', layout: 'relock', suite: 'lockContract' },
  { kind: 'readLock', topology: 'cluster', layout: 'relock', suite: 'lockContract', options: READ },
  { kind: 'multiLock', topology: 'cluster', layout: 'relock', suite: 'lockContract', options: MULTI },
  { kind: 'semaphore', topology: 'cluster', layout: 'relock', suite: 'semaphoreContract' },
  { kind: 'latch', topology: 'cluster', layout: 'relock', suite: 'latchContract' },
  { kind: 'leader', topology: 'cluster', layout: 'relock', suite: 'leaderContract' },
  // relock's layout: a Redlock client of 3 masters (the latch is refused there: ERR_LOCK_UNSUPPORTED;
  // multiLock over quorum locks is not a cell yet: test/integration/redlock/lock.test.ts covers it)
  { kind: 'lock', topology: 'redlock', layout: 'relock', suite: 'lockContract', options: { ...SHARED, ...RECHECK }, afterwards: [NO_PARTIAL_LOCK] },
  { kind: 'fairLock', topology: 'redlock', layout: 'relock', suite: 'lockContract', options: { ...SHARED, ...FAIR }, afterwards: [ONLY_FAIR_KEYS] },
  { kind: 'writeLock', topology: 'redlock', layout: 'relock', suite: 'lockContract', options: SHARED, afterwards: [NO_PARTIAL_RW_HOLD] },
  { kind: 'readLock', topology: 'redlock', layout: 'relock', suite: 'lockContract', options: { ...SHARED, ...READ }, afterwards: [NO_PARTIAL_RW_HOLD] },
  { kind: 'semaphore', topology: 'redlock', layout: 'relock', suite: 'semaphoreContract' },
  // Redisson's layout (docs/redisson.md; no latch, no Redlock client; multiLock not yet a cell): one server
  { kind: 'lock', topology: 'server', layout: 'redisson', suite: 'lockContract' },
  { kind: 'fairLock', topology: 'server', layout: 'redisson', suite: 'lockContract' },
  { kind: 'writeLock', topology: 'server', layout: 'redisson', suite: 'lockContract' },
  { kind: 'readLock', topology: 'server', layout: 'redisson', suite: 'lockContract', options: READ },
  { kind: 'semaphore', topology: 'server', layout: 'redisson', suite: 'semaphoreContract' },
  // Redisson's layout: a Redis Cluster of 3 masters (SPUBLISH with sharded pub/sub, else PUBLISH)
  { kind: 'lock', topology: 'cluster', layout: 'redisson', suite: 'lockContract' },
  { kind: 'fairLock', topology: 'cluster', layout: 'redisson', suite: 'lockContract' },
  { kind: 'writeLock', topology: 'cluster', layout: 'redisson', suite: 'lockContract' },
  { kind: 'readLock', topology: 'cluster', layout: 'redisson', suite: 'lockContract', options: READ },
  { kind: 'semaphore', topology: 'cluster', layout: 'redisson', suite: 'semaphoreContract' },
];

/**
 * The test file that runs a cell: relock's layout on a Cluster, test/contract/cluster.test.ts (one
 * Cluster for all: a Cluster takes about 3 s to start); on one server and on Redlock, the kind's file
 * test/contract/<kind>.test.ts; Redisson's layout, test/layouts/redisson.test.ts.
 */
export function fileOf(cell: Cell): string {
  if (cell.layout !== 'relock') return `layouts/${cell.layout}.test.ts`;
  return `contract/${cell.topology === 'cluster' ? 'cluster' : KINDS[cell.kind].file}.test.ts`;
}

/** How the suite names a cell. */
export function labelOf(cell: Cell): string {
  return `${KINDS[cell.kind].label}${WHERE[cell.topology]}${cell.layout === 'relock' ? '' : ` in the ${cell.layout === 'redisson' ? 'Redisson' : cell.layout} layout`}`;
}

const notApplicable = (cell: Cell, why: string) =>
  console.log(`  not applicable without ${why} (${[process.env.RELOCK_SERVER, process.env.RELOCK_TEST_CLIENT].filter(Boolean).join(', ') || 'this server'}): ${labelOf(cell)}`);

/**
 * Whether RELOCK_CONTRACT_CELLS picks the cell: a comma-separated list of words joined by `/`, each
 * word a kind, topology or layout (`cluster`, `lock/redlock`, `cluster/redisson,semaphore`); unset: every cell.
 */
function picked(cell: Cell): boolean {
  const filter = process.env.RELOCK_CONTRACT_CELLS;
  if (!filter) return true;
  return filter.split(',').some((entry) => entry.split('/').every((word) => ([cell.kind, cell.topology, cell.layout] as string[]).includes(word.trim())));
}

/** Runs the cells of the table that name the calling test file (`import.meta.url`). */
export function runCells(url: string): void {
  const path = fileURLToPath(url);
  const file = `${basename(dirname(path))}/${basename(path)}`;
  const named = CELLS.filter((cell) => fileOf(cell) === file);
  if (named.length === 0) throw new Error(`no contract cell names ${file}`);
  const cells = named.filter(picked);
  const runnable = cells.filter((cell) => {
    const why = cell.unless?.();
    if (why) notApplicable(cell, why);
    return !why;
  });
  // One Cluster for the file's Cluster cells, lent to each in turn.
  const cluster = shared(() => startDeployment('cluster'), runnable.filter((cell) => cell.topology === 'cluster').length);
  for (const cell of runnable) {
    const servers =
      cell.topology === 'cluster' ? cluster : shared(() => startDeployment(cell.topology), cell.afterwards ? 2 : 1);
    run(cell, servers);
    if (cell.afterwards) {
      describe(`${labelOf(cell)}: what the contract left on its servers`, (it) => {
        let deployment: Deployment;
        it.before(async () => {
          deployment = await servers();
        });
        it.after(() => deployment.stop());
        for (const { title, test } of cell.afterwards!) it(title, () => test(deployment));
      });
    }
  }
}

function run(cell: Cell, servers: () => Promise<Deployment>): void {
  const label = labelOf(cell);
  const clientOptions = cell.layout === 'relock' ? {} : ({ layout: cell.layout } as const);
  if (cell.suite === 'lockContract') {
    lockContract(label, KINDS[cell.kind].lock!, { ...cell.options, clientOptions, servers });
  } else if (cell.suite === 'semaphoreContract') {
    semaphoreContract(label, async () => {
      const f = fixtureOn(await servers());
      return {
        client: () => f.client(clientOptions),
        admins: f.admins,
        passedIn() {
          const connections = f.deployment.connect();
          return { client: new LockClient({ redis: connections, ...clientOptions }), connections: each(connections) };
        },
        stop: () => f.close(),
      };
    });
  } else {
    const suite = cell.suite === 'latchContract' ? latchContract : leaderContract;
    suite(label, async () => {
      const f = fixtureOn(await servers());
      return { client: () => f.client(clientOptions), admins: f.admins, stop: () => f.close() };
    });
  }
}
