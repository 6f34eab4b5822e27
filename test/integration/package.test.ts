import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe } from '../helpers/describe.ts';
import { startRedis, type RedisServer } from '../helpers/redis.ts';

const root = join(import.meta.dirname, '..', '..');
let server: RedisServer;

// What a user of the published package runs: the built bundles, not src/.
const program = (load: string) => `
  const { LockClient, LockTimeoutError } = ${load};
  const client = new LockClient({ redis: process.env.REDIS_URL });
  const lock = client.lock('package-test');
  const lease = await lock.acquire({ waitMs: 1000 });
  const nested = await lease.run(() => lock.acquire({ waitMs: 0 }));
  const timeout = await client.lock('package-test').acquire({ waitMs: 50 }).catch((e) => e);
  await nested.release();
  await lease.release();
  await client.close();
  console.log(nested.holdCount, timeout instanceof LockTimeoutError, timeout.code);
`;

describe('built package', (it) => {
  it.before(async () => {
    server = await startRedis();
  });
  it.after(() => server.stop());

  for (const [format, file, load] of [
    ['CommonJS', 'dist/index.cjs', `require(${JSON.stringify(join(root, 'dist', 'index.cjs'))})`],
    ['ESM', 'dist/index.mjs', `await import(${JSON.stringify(join(root, 'dist', 'index.mjs'))})`],
  ] as const) {
    it(`locks, re-enters and times out through the ${format} bundle`, async () => {
      assert.ok(existsSync(join(root, file)), `${file} is missing: npm test builds it first (npm run build)`);
      const code = format === 'CommonJS' ? `(async () => { ${program(load)} })()` : program(load);
      const { stdout } = await promisify(execFile)(
        process.execPath,
        format === 'CommonJS' ? ['-e', code] : ['--input-type=module', '-e', code],
        { env: { ...process.env, REDIS_URL: server.url }, timeout: 15_000 },
      );
      assert.is(stdout.trim(), '2 true ERR_LOCK_TIMEOUT');
    });
  }
});
