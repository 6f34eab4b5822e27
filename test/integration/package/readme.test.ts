import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe } from '../../helpers/describe.ts';
import { startRedis, type RedisServer } from '../../helpers/redis.ts';

const root = join(import.meta.dirname, '..', '..', '..');
let server: RedisServer;

describe('README', (it) => {
  it.before(async () => {
    server = await startRedis();
  });
  it.after(() => server.stop());

  /** Runs the README's n-th ts example as written (but for where 'relock' resolves), against the suite Redis. */
  async function runExample(index: number): Promise<string> {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const example = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)][index]?.[1];
    assert.ok(example, `README has a ts example number ${index + 1}`);
    const dir = mkdtempSync(join(root, 'test', '.readme-'));
    try {
      const file = join(dir, 'example.ts');
      writeFileSync(file, example!.replace("from 'relock'", `from ${JSON.stringify(join(root, 'src', 'index.ts'))}`));
      const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', file], {
        env: { ...process.env, REDIS_URL: server.url },
        timeout: 15_000,
      });
      return stdout;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('runs its first example, the smallest lock, as written', async () => {
    assert.is(await runExample(0), 'one process at a time builds the report\n');
  });

  it('runs its re-entry example as written', async () => {
    assert.match(await runExample(1), /^order:42 is ours, fencing token \d{10,}\n.*add book, hold 2\n$/s);
  });

  // Issue 31, point 7: the two commands sat at lines 154-162 of 180, after three tables.
  it('starts with the start: what it is, install, the smallest lock, then the two commands, before any table', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const lines = readme.split('\n');
    const at = (text: string) => lines.findIndex((line) => line.includes(text));
    const headings = lines.filter((line) => line.startsWith('## ')).slice(0, 3);
    assert.equal(headings, ['## Install', '## The smallest lock', '## Try it']);
    const intro = lines.slice(1, at('## Install')).join(' ').trim();
    assert.ok(intro.length > 0 && intro.length < 400, `a short intro: ${intro.length} characters`);
    assert.match(readme.slice(readme.indexOf('## The smallest lock')), /^[^|]*\.runExclusive\(/, 'the smallest lock uses runExclusive, before any table');
    const firstTable = lines.findIndex((line) => line.startsWith('|'));
    for (const command of ['npm ci && npm run demo', 'npm test ']) {
      const line = at(command);
      assert.ok(line > 0 && line < firstTable && line < 40, `"${command}" at line ${line + 1}, before the first table (line ${firstTable + 1})`);
    }
    assert.is(lines.filter((line) => /^\| ---/.test(line)).length, 2, 'two tables: the primitives and one comparison');
    assert.not.match(readme, /ops\/s|wait p99/, 'benchmark figures live in docs/benchmarks.md');
  });

  it('says that each lock name leaves a small :fence key with a TTL', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8').replace(/\s+/g, ' ');
    assert.match(readme, ':fence` key');
    assert.match(readme, '`fenceTtlMs`, one hour by default');
  });
});
