// The client matrix (npm run test:clients, run by CI): the suites of every kind run over each client
// family a LockClient can be given, besides npm test's (relock's own ioredis connections):
// RELOCK_TEST_CLIENT names the family to the suites (test/helpers/clients.ts). iovalkey and node-redis
// run the contract suites, Redlock, Cluster and the short fault run; node-redis with RESP3 and
// node-redis 6 run the contract suites and the Cluster; GLIDE 2 (GlideClient, GlideClusterClient)
// runs what iovalkey and node-redis do; the last cell runs the Redisson interop suites on one server
// and a Cluster, the contract suites (test/layouts) and the short fault run in the Redisson layout
// (RELOCK_TEST_LAYOUT). Prints a line per family, then
// "N passed, N failed" over all of them.
// Usage: node --import tsx test/clients.ts [family ...]
import { ENV, FAMILIES, report, runCell, type Counts } from './matrix.ts';

const chosen = process.argv.slice(2).length > 0 ? process.argv.slice(2) : Object.keys(FAMILIES);
const rows: (Counts & { label: string })[] = [];
for (const family of chosen) {
  const groups = FAMILIES[family];
  if (!groups) throw new Error(`unknown client family ${family}: expected one of ${Object.keys(FAMILIES).join(', ')}`);
  rows.push({ label: `${family.padEnd(17)} ${groups.join(' ').padEnd(50)}`, ...(await runCell(`${family}: ${groups.join(' ')}`, groups, ENV[family] ?? { RELOCK_TEST_CLIENT: family })) });
}
report('client', rows);
