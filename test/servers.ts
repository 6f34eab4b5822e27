// The server matrix (npm run test:servers): the contract suites of every kind, Redlock, Cluster and the
// short fault run, on each server of the matrix that npm test does not cover (it runs the machine's
// Redis 7.0). scripts/servers.sh brings each server into .servers/<name>/bin (its redis-server and
// redis-cli), which goes first on the PATH of that server's run; RELOCK_SERVER names it to the tests.
// Prints a line per server and suite group, then "N passed, N failed" over all of them.
// Usage: node --import tsx test/servers.ts [server ...] [-- group ...]
import { execFileSync, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));
const SERVERS = ['valkey-8.0', 'redis-6.0'];
/** Suite groups by the name the matrix prints: a folder or files under test/, as test/run.ts takes them. */
const GROUPS: Record<string, readonly string[]> = {
  contract: ['contract'],
  'integration/redlock': ['integration/redlock'],
  'integration/cluster': ['integration/cluster'],
  // The ACL user and the managed-service profile: Valkey and Redis 6.0 differ in what a user may run.
  'acl+managed': ['integration/security.test.ts', 'integration/managed.test.ts'],
  'faults-short': ['faults-short'],
};

const argv = process.argv.slice(2);
const dash = argv.indexOf('--');
const servers = (dash < 0 ? argv : argv.slice(0, dash)).filter(Boolean);
const groups = dash < 0 ? Object.keys(GROUPS) : argv.slice(dash + 1);
const chosen = servers.length > 0 ? servers : SERVERS;

const bins = execFileSync('bash', [join(root, '..', 'scripts', 'servers.sh'), ...chosen], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
  .trim()
  .split('\n');

const rows: { server: string; group: string; passed: number; failed: number }[] = [];
for (const [i, server] of chosen.entries()) {
  for (const group of groups) {
    const { passed, failed } = await runGroup(server, bins[i]!, group);
    rows.push({ server, group, passed, failed });
  }
}

console.log('\nserver matrix:');
for (const row of rows) console.log(`  ${row.server.padEnd(11)} ${row.group.padEnd(22)} ${row.passed} passed, ${row.failed} failed`);
const passed = rows.reduce((sum, row) => sum + row.passed, 0);
const failed = rows.reduce((sum, row) => sum + row.failed, 0);
console.log(`servers: ${passed} passed, ${failed} failed`);
if (failed > 0 || passed === 0) process.exitCode = 1;

/** One group on one server, through test/run.ts; its closing line gives the counts. */
function runGroup(server: string, bin: string, group: string): Promise<{ passed: number; failed: number }> {
  console.log(`\n=== ${server}: ${group}`);
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'run.ts'), ...(GROUPS[group] ?? [group])], {
    env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, RELOCK_SERVER: server },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let last = '';
  child.stdout.on('data', (data: Buffer) => {
    process.stdout.write(data);
    last = (last + data.toString()).slice(-400);
  });
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      const match = /tests: (\d+) passed, (\d+) failed/.exec(last);
      const counts = match ? { passed: Number(match[1]), failed: Number(match[2]) } : { passed: 0, failed: 1 };
      // A run that exited non-zero without counting a failure failed outside any test.
      resolve(code !== 0 && counts.failed === 0 ? { ...counts, failed: 1 } : counts);
    });
  });
}
