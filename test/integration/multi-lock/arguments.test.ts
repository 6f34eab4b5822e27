// client.multiLock(): bad members are refused before any I/O; the acquire is traced under the joined name.
import { tracingChannel } from 'node:diagnostics_channel';
import { Redis } from 'ioredis';
import * as assert from 'uvu/assert';
import { LockClient, type AcquireTraceContext, type Lock } from '../../../src/index.ts';
import { describe, uniqueName } from '../../helpers/describe.ts';
import { setup } from '../../helpers/fixture.ts';

describe('LockClient#multiLock: arguments and tracing', (it) => {
  const s = setup(it);

  it('refuses members of another client, non-locks, an empty list and a lock given twice, before any I/O', async () => {
    const redis = new Redis({ host: s.f.server.host, port: s.f.server.port, lazyConnect: true });
    const client = new LockClient({ redis });
    const other = new LockClient({ redis });
    const name = uniqueName('multi');
    const cases: [string, () => unknown, typeof TypeError | typeof RangeError, RegExp][] = [
      ['a lock of another client', () => client.multiLock([client.lock(`${name}:a`), other.lock(`${name}:b`)]), TypeError, /`locks\[1\]` \(".*:b"\) to come from the LockClient/],
      ['not a lock', () => client.multiLock([client.lock(name), { name: 'fake' } as unknown as Lock]), TypeError, /`locks\[1\]` to be a lock/],
      ['null', () => client.multiLock([null as unknown as Lock]), TypeError, /`locks\[0\]`/],
      ['not an array', () => client.multiLock(client.lock(name) as unknown as Lock[]), TypeError, /`locks` to be an array/],
      ['empty', () => client.multiLock([]), RangeError, /at least one lock/],
      ['a lock twice', () => client.multiLock([client.lock(name), client.lock(`${name}:x`), client.lock(name)]), RangeError, /each lock once, got ".*" at 0 and 2/],
      [
        'both sides of one read-write lock',
        () => client.multiLock([client.readWriteLock(name).writeLock(), client.lock(name), client.readWriteLock(name).readLock()]),
        RangeError,
        /one side of read-write lock ".*", got its readLock\(\) at 2 and writeLock\(\) at 0/,
      ],
    ];
    for (const [what, call, ErrorClass, message] of cases) {
      let error: any;
      try {
        call();
      } catch (caught) {
        error = caught;
      }
      assert.instance(error, ErrorClass, what);
      assert.match(String(error.message), message, what);
    }
    // A lock and a fair lock of one name are two locks (their keys differ): allowed.
    assert.is(client.multiLock([client.lock(name), client.fairLock(name)]).name, `${name},${name}`);
    assert.is(redis.status, 'wait', 'no connection was attempted');
    await Promise.all([client.close(), other.close()]);
    redis.disconnect();
  });

  it("is traced under the joined name with kind 'multi-lock', token and wait on the context", async () => {
    const base = uniqueName('multi');
    const multi = s.client.multiLock([s.client.lock(`${base}:b`), s.client.lock(`${base}:a`)]);
    const seen: { event: string; context: AcquireTraceContext }[] = [];
    const handlers = (channel: string) => ({
      start: (context: unknown) => void seen.push({ event: `${channel} start`, context: context as AcquireTraceContext }),
      end: () => undefined,
      asyncStart: () => undefined,
      asyncEnd: (context: unknown) => void seen.push({ event: `${channel} end`, context: context as AcquireTraceContext }),
      error: () => undefined,
    });
    const acquire = handlers('acquire');
    const release = handlers('release');
    tracingChannel('relock:acquire').subscribe(acquire);
    tracingChannel('relock:release').subscribe(release);
    try {
      const lease = await multi.acquire();
      await lease.release();
      const own = seen.filter((s) => s.context.kind === 'multi-lock');
      assert.equal(own.map((s) => s.event), ['acquire start', 'acquire end', 'release start', 'release end']);
      for (const { context } of own) {
        assert.is(context.name, `${base}:b,${base}:a`);
        assert.is(context.clientId, s.client.id);
      }
      assert.is(own[1]!.context.fencingToken, lease.fencingToken);
      assert.ok(typeof own[1]!.context.waitedMs === 'number' && own[1]!.context.waitedMs >= 0);
      // The members are traced too, each under its own name and kind, inside the multi-lock's span.
      assert.equal(
        seen.filter((s) => s.event === 'acquire start' && s.context.kind === 'lock').map((s) => s.context.name),
        [`${base}:a`, `${base}:b`],
      );
    } finally {
      tracingChannel('relock:acquire').unsubscribe(acquire);
      tracingChannel('relock:release').unsubscribe(release);
    }
  });
});
