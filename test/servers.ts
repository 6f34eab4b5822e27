// The server matrix (npm run test:servers): the contract suites of every kind, Redlock, Cluster, the
// short fault run, the Redisson interop suites and the refusal of a server without Lua, on each server
// of the matrix that npm test does not cover (it runs the machine's Redis 7.0): Valkey 8.0, 8.1 and
// 9.1, Redis 6.0 and 8.0. scripts/servers.sh brings each server into .servers/<name>/bin (its redis-server and
// redis-cli), which goes first on the PATH of that server's run; RELOCK_SERVER names it to the tests.
// Prints a line per server and suite group, then "N passed, N failed" over all of them.
// RELOCK_SERVER_JOBS (default 1) servers run side by side, each through its groups in turn, each cell's
// output printed whole when it ends; with more than one, a cell gets RELOCK_TEST_JOBS=2 and
// RELOCK_FAULT_JOBS=1 (unless set), so that at most 2 fault scenario files run at once, as alone (CI: 2).
// Usage: node --import tsx test/servers.ts [server ...] [-- group ...]
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GROUPS, inPool, report, runCell, SERVERS, type Counts } from './matrix.ts';

const root = dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
const servers = (dash < 0 ? argv : argv.slice(0, dash)).filter(Boolean);
const groups = dash < 0 ? Object.keys(GROUPS) : argv.slice(dash + 1);
const chosen = servers.length > 0 ? servers : SERVERS;

const bins = execFileSync('bash', [join(root, '..', 'scripts', 'servers.sh'), ...chosen], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  .trim()
  .split('\n');

const jobs = Math.max(1, Number(process.env.RELOCK_SERVER_JOBS ?? 1) || 1);
const shared = jobs > 1 ? { RELOCK_TEST_JOBS: process.env.RELOCK_TEST_JOBS ?? '2', RELOCK_FAULT_JOBS: process.env.RELOCK_FAULT_JOBS ?? '1' } : {};
const perServer = await inPool([...chosen.entries()], jobs, async ([i, server]) => {
  const rows: (Counts & { label: string })[] = [];
  for (const group of groups) {
    const counts = await runCell(`${server}: ${group}`, GROUPS[group] ?? [group], { ...shared, PATH: `${bins[i]!}:${process.env.PATH}`, RELOCK_SERVER: server }, jobs > 1);
    rows.push({ label: `${server.padEnd(11)} ${group.padEnd(22)}`, ...counts });
  }
  return rows;
});
report('server', perServer.flat());
