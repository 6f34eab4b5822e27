// The ESM and the CommonJS build loaded in one process (a dependency requires relock while the app
// imports it): two copies of every class, and `instanceof` must hold across them, both ways.
// Needs the built package (npm test builds it first; alone: npm run build).
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as Relock from '../../../src/index.ts';
import { describe, uniqueName } from '../../helpers/describe.ts';
import { startRedis, type RedisServer } from '../../helpers/redis.ts';

const root = join(import.meta.dirname, '..', '..', '..');
const CLASSES = ['LockError', 'LockTimeoutError', 'LockNotHeldError', 'LockLostError'] as const;
type Build = typeof Relock;

async function builds(): Promise<{ esm: Build; cjs: Build }> {
  for (const file of ['index.mjs', 'index.cjs']) assert.ok(existsSync(join(root, 'dist', file)), `dist/${file} is missing: npm test builds it first (npm run build)`);
  const esm = (await import(pathToFileURL(join(root, 'dist', 'index.mjs')).href)) as Build;
  const cjs = createRequire(import.meta.url)(join(root, 'dist', 'index.cjs')) as Build;
  assert.is.not(esm.LockError, cjs.LockError, 'two copies of each class');
  return { esm, cjs };
}

describe('built package: errors of the ESM and the CommonJS build in one process', (it) => {
  let server: RedisServer;
  it.before(async () => {
    server = await startRedis();
  });
  it.after(() => server.stop());

  it('recognises every error class of one build as an instance of the other build\'s class, both ways', async () => {
    const { esm, cjs } = await builds();
    for (const [from, to, way] of [
      [esm, cjs, 'ESM error, CommonJS class'],
      [cjs, esm, 'CommonJS error, ESM class'],
    ] as const) {
      for (const made of CLASSES) {
        const error = new from[made]('message', { lockName: 'order:1' });
        for (const tested of CLASSES) {
          // What instanceof says within one build, it says across the two.
          assert.is(error instanceof to[tested], error instanceof from[tested], `${way}: a ${made} instanceof ${tested}`);
        }
        assert.ok(error instanceof to[made], `${way}: a ${made} instanceof ${made}`);
        assert.ok(error instanceof to.LockError, `${way}: a ${made} instanceof LockError`);
      }
    }
  });

  it('recognises the errors a client of one build rejects with, by the other build\'s classes', async () => {
    const { esm, cjs } = await builds();
    for (const [from, to] of [
      [esm, cjs],
      [cjs, esm],
    ] as const) {
      const client = new from.LockClient({ redis: server.url });
      const other = new from.LockClient({ redis: server.url });
      try {
        const name = uniqueName('dual');
        const lease = await client.lock(name).acquire();
        const timeout = await other.lock(name).acquire({ waitMs: 0 }).catch((error: unknown) => error);
        await lease.release();
        const notHeld = await lease.release().catch((error: unknown) => error);
        assert.ok(timeout instanceof to.LockTimeoutError && timeout instanceof to.LockError, 'the timeout');
        assert.not.ok(timeout instanceof to.LockNotHeldError);
        assert.ok(notHeld instanceof to.LockNotHeldError && notHeld instanceof to.LockError, 'the second release');
        assert.not.ok(notHeld instanceof to.LockLostError);
      } finally {
        await Promise.all([client.close(), other.close()]);
      }
    }
  });

  it('keeps instanceof of subclasses of its own, and refuses look-alikes without the brand', async () => {
    const { esm, cjs } = await builds();
    class Mine extends esm.LockTimeoutError {}
    const mine = new Mine('mine');
    assert.ok(mine instanceof cjs.LockTimeoutError && mine instanceof cjs.LockError, 'a subclass of one build is an error of the other');
    assert.not.ok(new cjs.LockTimeoutError('theirs') instanceof Mine, 'a subclass is not every LockTimeoutError');
    assert.ok(mine instanceof Mine);
    const lookalike = Object.assign(new Error('fake'), { name: 'LockTimeoutError', code: 'ERR_LOCK_TIMEOUT' });
    for (const value of [lookalike, { code: 'ERR_LOCK' }, null, undefined, 'LockError', 42]) {
      assert.not.ok(value instanceof cjs.LockError, `${String(value)} is no LockError`);
      assert.not.ok(value instanceof esm.LockTimeoutError, `${String(value)} is no LockTimeoutError`);
    }
    // A LockError with a subclass's code is still not that subclass (as within one build).
    assert.not.ok(new esm.LockError('coded', { code: 'ERR_LOCK_TIMEOUT' }) instanceof cjs.LockTimeoutError);
  });
});
