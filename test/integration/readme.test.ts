import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe } from '../helpers/describe.ts';
import { startRedis, type RedisServer } from '../helpers/redis.ts';

const root = join(import.meta.dirname, '..', '..');
let server: RedisServer;

describe('README', (it) => {
  it.before(async () => {
    server = await startRedis();
  });
  it.after(() => server.stop());

  it('runs its example as written, against the suite Redis', async () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const example = /```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    assert.ok(example, 'README has a ts example');
    const dir = mkdtempSync(join(root, 'test', '.readme-'));
    try {
      const file = join(dir, 'example.ts');
      writeFileSync(file, example!.replace("from 'relock'", `from ${JSON.stringify(join(root, 'src', 'index.ts'))}`));
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', file], {
        env: { ...process.env, REDIS_URL: server.url },
        timeout: 15_000,
      });
      assert.match(stdout, /^order:42 is ours, fencing token \d{10,}\nadd book, hold 2\n$/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
