// The CI matrix (npm run test:matrix): every server of the server matrix (test/servers.ts) and every
// client family of the client matrix (test/clients.ts) runs its groups once, each client family paired
// with one server, instead of each server over ioredis and each family over Redis 7.0 (which together
// take about 45 minutes on 2 cores; this takes about a third). A pair tests the client and the server
// together: the contract suites, Redlock and Cluster of a family run on its server, and the groups that
// test the server itself (ACL and the managed profile, the Redisson interop suites, no Lua) run on every
// server over ioredis. The short fault run goes with ioredis, node-redis and GLIDE; iovalkey (ioredis's
// fork: the same reconnection and resend) and the Redisson layout run it in `npm run test:clients`, and
// every server over ioredis in `npm run test:servers`.
// Usage: node --import tsx test/pairs.ts [cell ...]
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENV, FAMILIES, FULL, GROUPS as SERVER_GROUPS, report, runCell, SERVERS, type Counts } from './matrix.ts';

const root = dirname(fileURLToPath(import.meta.url));

interface Cell {
  /** A server of the server matrix, or none: the machine's Redis 7.0 (redis-server on the PATH). */
  readonly server?: string;
  /** A family of the client matrix (RELOCK_TEST_CLIENT), or ioredis. */
  readonly client: string;
  readonly groups: readonly string[];
}

/** What tests the server itself, run on every server over ioredis. */
const BY_SERVER = ['acl+managed', 'integration/redisson', 'no-lua'].flatMap((group) => SERVER_GROUPS[group]!);
/** Groups but the short fault run. */
const quick = (groups: readonly string[]) => groups.filter((group) => group !== 'faults-short');
const QUICK = quick(FULL);

/**
 * Two lanes side by side, each running its cells in turn: the cells with the short fault run (two
 * scenario files at once, test/run.ts's default) beside the cells without; each lane gets 2 test
 * files at once, so that the machine runs what npm test's 4 workers would.
 */
const LANES: Record<string, Record<string, Cell>> = {
  faults: {
    'glide @ valkey-9.1': { server: 'valkey-9.1', client: 'glide', groups: FULL },
    'node-redis @ redis-8.0': { server: 'redis-8.0', client: 'node-redis', groups: FULL },
    'ioredis @ valkey-8.1': { server: 'valkey-8.1', client: 'ioredis', groups: FULL },
  },
  rest: {
    'layout-redisson': { client: 'layout-redisson', groups: quick(FAMILIES['layout-redisson']!) },
    'ioredis @ redis-6.0': { server: 'redis-6.0', client: 'ioredis', groups: [...QUICK, ...BY_SERVER] },
    'iovalkey @ valkey-8.0': { server: 'valkey-8.0', client: 'iovalkey', groups: QUICK },
    'server valkey-8.0': { server: 'valkey-8.0', client: 'ioredis', groups: BY_SERVER },
    'server valkey-8.1': { server: 'valkey-8.1', client: 'ioredis', groups: BY_SERVER },
    'server valkey-9.1': { server: 'valkey-9.1', client: 'ioredis', groups: BY_SERVER },
    'server redis-8.0': { server: 'redis-8.0', client: 'ioredis', groups: BY_SERVER },
    'node-redis-resp3': { client: 'node-redis-resp3', groups: FAMILIES['node-redis-resp3']! },
    'node-redis-6': { client: 'node-redis-6', groups: FAMILIES['node-redis-6']! },
  },
};
const CELLS: Record<string, Cell> = Object.assign({}, ...Object.values(LANES));

const asked = process.argv.slice(2);
for (const name of asked) if (!CELLS[name]) throw new Error(`unknown cell ${name}: expected one of ${Object.keys(CELLS).join(', ')}`);
const lanes = Object.values(LANES).map((lane) => Object.keys(lane).filter((name) => asked.length === 0 || asked.includes(name)));
const servers = SERVERS.filter((server) => lanes.flat().some((name) => CELLS[name]!.server === server));
const bins = servers.length === 0 ? [] : execFileSync('bash', [join(root, '..', 'scripts', 'servers.sh'), ...servers], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n');
const rows = (
  await Promise.all(
    lanes.map(async (names) => {
      const done: (Counts & { label: string })[] = [];
      for (const name of names) {
        const cell = CELLS[name]!;
        const env: Record<string, string> = { RELOCK_TEST_JOBS: '2', RELOCK_FAULT_JOBS: '2', ...(ENV[cell.client] ?? { RELOCK_TEST_CLIENT: cell.client }) };
        if (cell.server) Object.assign(env, { PATH: `${bins[servers.indexOf(cell.server)]!}:${process.env.PATH}`, RELOCK_SERVER: cell.server });
        const started = performance.now();
        const counts = await runCell(`${name}: ${cell.groups.join(' ')}`, cell.groups, env, true);
        const minutes = ((performance.now() - started) / 60_000).toFixed(1);
        done.push({ label: `${name.padEnd(24)} ${`${minutes} min`.padStart(9)}`, ...counts });
      }
      return done;
    }),
  )
).flat();
report('pair', rows);
