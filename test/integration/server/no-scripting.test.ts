// A server that runs no Lua (issue 32, point 3): scripting commands renamed away ("unknown command",
// as a server or proxy without scripting answers), and Valkey 9's Lua engine module unloaded ("Could
// not find scripting engine"). Every kind's first use rejects with ERR_LOCK_NO_SCRIPTING, a message that
// says so, nothing written: never a hang, never the raw reply error.
import { execFileSync } from 'node:child_process';
import * as assert from 'uvu/assert';
import { LockClient, LockError } from '../../../src/index.ts';
import { applicableOnly, describe, rejects, uniqueName, within } from '../../helpers/describe.ts';
import { setup, type Suite } from '../../helpers/fixture.ts';
import { startPrivateRedis, type RedisServer } from '../../helpers/redis.ts';

/** The first use of every kind, each expected to reject with ERR_LOCK_NO_SCRIPTING within 5 s. */
function firstUses(client: LockClient): [string, () => Promise<unknown>][] {
  return [
    ['lock().acquire()', () => client.lock(uniqueName()).acquire({ waitMs: 2_000 })],
    ['lock().tryAcquire()', () => client.lock(uniqueName()).tryAcquire()],
    ['fairLock().acquire()', () => client.fairLock(uniqueName()).acquire({ waitMs: 2_000 })],
    ['readWriteLock().readLock().acquire()', () => client.readWriteLock(uniqueName()).readLock().acquire({ waitMs: 2_000 })],
    ['readWriteLock().writeLock().acquire()', () => client.readWriteLock(uniqueName()).writeLock().acquire({ waitMs: 2_000 })],
    ['semaphore().acquire()', () => client.semaphore(uniqueName(), { permits: 2 }).acquire({ waitMs: 2_000 })],
    ['countDownLatch().trySetCount()', () => client.countDownLatch(uniqueName()).trySetCount(2)],
    ['countDownLatch().countDown()', () => client.countDownLatch(uniqueName()).countDown()],
  ];
}

async function refusesEveryKind(s: Suite, answer: RegExp): Promise<void> {
  for (const [what, use] of firstUses(s.client)) {
    const error = await within(rejects(use()), 5_000, what);
    assert.instance(error, LockError, `${what}: a LockError (got ${String(error)})`);
    assert.is(error.code, 'ERR_LOCK_NO_SCRIPTING', `${what}: ${error.message}`);
    assert.match(error.message, /runs no Lua scripts/, what);
    assert.match(String(error.cause), answer, `${what}: the server's answer is the cause`);
  }
  assert.is(await s.f.admin.dbsize(), 0, 'nothing was written');
}

// The commands of Lua scripting since Redis 2.6 (FUNCTION and FCALL, Redis 7, would stop Redis 6.0 from starting).
const NO_SCRIPTING = ['EVAL', 'EVALSHA', 'SCRIPT'].flatMap((command) => ['--rename-command', command, '']);

describe('a server without Lua: scripting commands renamed away', (it) => {
  const s = setup(it, {}, {}, { private: true, args: NO_SCRIPTING });
  it('refuses the first use of every kind with ERR_LOCK_NO_SCRIPTING, nothing written', () => refusesEveryKind(s, /unknown command/i));

  it('refuses a Redlock acquire over masters without Lua with ERR_LOCK_NO_SCRIPTING', async () => {
    const others: RedisServer[] = [await startPrivateRedis({ args: NO_SCRIPTING }), await startPrivateRedis({ args: NO_SCRIPTING })];
    const client = new LockClient({ redis: [s.f.server.url, ...others.map((server) => server.url)] });
    try {
      const error = await within(rejects(client.lock(uniqueName()).acquire({ waitMs: 2_000 })), 5_000, 'the Redlock acquire');
      assert.instance(error, LockError, String(error));
      assert.is(error.code, 'ERR_LOCK_NO_SCRIPTING', error.message);
    } finally {
      await client.close();
      for (const server of others) await server.stop();
    }
  });
});

// Valkey 9 runs Lua as a module of its own ("lua"), which MODULE UNLOAD takes away.
const version = execFileSync('redis-server', ['--version'], { encoding: 'utf8' });
const valkey9 = /^Valkey server v=(\d+)/.exec(version);
describe("a server without Lua: Valkey 9 with its 'lua' module unloaded", (it) => {
  const applicable = valkey9 !== null && Number(valkey9[1]) >= 9;
  const s = setup(it, {}, {}, { private: true, args: applicable ? ['--enable-module-command', 'yes'] : [] });
  applicableOnly(it, applicable, "Valkey 9's lua module")('refuses the first use of every kind with ERR_LOCK_NO_SCRIPTING, nothing written', async () => {
    await s.f.admin.call('MODULE', 'UNLOAD', 'lua');
    await refusesEveryKind(s, /scripting engine/i);
  });
});
