import * as assert from 'uvu/assert';
import { describe, eventually, uniqueName } from '../../helpers/describe.ts';
import { fixture, type Fixture } from '../../helpers/fixture.ts';
import { freePort } from '../../helpers/redis.ts';
import { relock } from './cli.ts';

let f: Fixture;
let env: { REDIS_URL: string };

describe('relock status and unlock', (it) => {
  it.before(async () => {
    f = await fixture();
    env = { REDIS_URL: f.server.url };
  });
  it.after(() => f.close());

  it('status prints the holder, its hold count, TTL <ms>, the waiters and the fencing token', async () => {
    const name = uniqueName('cli');
    const holder = f.client();
    const lock = holder.lock(name);
    const { waiter } = await lock.runExclusive(async (lease) => {
      return lock.runExclusive(async () => {
        const waiter = f.client().lock(name).acquire({ waitMs: 10_000 });
        await eventually(async () => (await f.admin.call('pubsub', 'numsub', `relock:{${name}}:released`) as [string, number])[1] === 1, 'the waiter waits');
        const text = await relock(['status', name], env);
        assert.is(text.code, 0, text.stderr);
        const [owner] = await f.admin.hkeys(`relock:{${name}}`);
        assert.ok(owner!.startsWith(`${holder.id}:`));
        assert.match(text.stdout, `${name}: held by 1 owner (lock, key relock:{${name}})`);
        assert.match(text.stdout, `holder ${owner} hold count 2`);
        const ttl = Number(/TTL (\d+) ms/.exec(text.stdout)?.[1]);
        assert.ok(ttl > 0 && ttl <= holder.leaseMs, `TTL ${ttl}`);
        assert.match(text.stdout, 'waiters 1');
        assert.match(text.stdout, `fencing token ${lease.fencingToken}`);

        const json = JSON.parse((await relock(['status', name, '--json'], env)).stdout);
        assert.equal({ ...json, ttlMs: typeof json.ttlMs }, {
          name,
          kind: 'lock',
          key: `relock:{${name}}`,
          holders: [{ owner, holdCount: 2 }],
          ttlMs: 'number',
          waiters: 1,
          fencingToken: lease.fencingToken,
        });
        return { waiter }; // not awaited in the hold: it waits for the hold to end
      });
    });
    await (await waiter).release();
  });

  it('status says free, and of a fair lock counts every queued acquire', async () => {
    const name = uniqueName('cli');
    const free = await relock(['status', name], env);
    assert.equal([free.code, free.stdout], [0, `${name}: free (lock, key relock:{${name}})\n  waiters 0\n  fencing token none\n`]);

    const other = f.client();
    const lease = await f.client().fairLock(name).acquire();
    const waits = [other.fairLock(name).acquire({ waitMs: 10_000 }), other.fairLock(name).acquire({ waitMs: 10_000 })];
    await eventually(async () => (await f.admin.llen(`relock:{${name}}:fair:q`)) === 2, 'two acquires queue');
    const fair = JSON.parse((await relock(['status', name, '--fair', '--json'], env)).stdout);
    assert.equal([fair.kind, fair.holders.length, fair.waiters, fair.fencingToken], ['fair-lock', 1, 2, lease.fencingToken]);
    await lease.release();
    for (const wait of waits) await (await wait).release();
  });

  it('unlock force-unlocks whoever holds the lock, and says when it was not locked', async () => {
    const name = uniqueName('cli');
    const lease = await f.client({ leaseMs: 600 }).lock(name).acquire();
    const unlocked = await relock(['unlock', name], env);
    assert.equal([unlocked.code, unlocked.stdout], [0, `unlocked ${name}\n`]);
    assert.is(await f.admin.exists(`relock:{${name}}`), 0);
    await eventually(() => lease.signal.aborted, 'the holder learns at its next renewal');
    const again = await relock(['unlock', name], env);
    assert.equal([again.code, again.stdout], [0, `${name} was not locked\n`]);
  });

  // Six runs of the command, one after another: six process starts, a few seconds each on a busy
  // machine (the test's limit is a guard against a hang, not a bound on relock).
  it(
    'status and unlock take --redis and --prefix, and exit 69 when Redis is unreachable',
    async () => {
      const name = uniqueName('cli');
      const lease = await f.client({ prefix: 'billing' }).lock(name).acquire();
      const nowhere = { REDIS_URL: `redis://127.0.0.1:${await freePort()}` };
      const status = await relock(['status', name, '--prefix', 'billing', '--redis', f.server.url], nowhere);
      assert.match(status.stdout, `held by 1 owner (lock, key billing:{${name}})`);
      assert.match((await relock(['status', name], env)).stdout, `${name}: free`);
      const unlocked = await relock(['unlock', name, '--prefix', 'billing', '--redis', f.server.url], nowhere);
      assert.is(unlocked.stdout, `unlocked ${name}\n`);
      for (const command of ['status', 'unlock']) {
        const down = await relock([command, name], nowhere);
        assert.is(down.code, 69, `${command}: ${down.stderr}`);
        assert.match(down.stderr, 'could not be reached');
      }
      await lease.release().catch(() => undefined);
    },
    60_000,
  );

  it('status exits 1 and names the key when it holds something that is not a lock', async () => {
    const name = uniqueName('cli');
    await f.admin.set(`relock:{${name}}`, 'not a lock');
    const status = await relock(['status', name], env);
    assert.is(status.code, 1);
    assert.match(status.stderr, `"relock:{${name}}" holds a string`);
  });
});
