// lua/rw-lock: every reply the headers list, produced by running the scripts directly (as the
// runtime does), plus the codes WRONGTYPE and FENCEOVERFLOW become.
import * as assert from 'uvu/assert';
import * as lua from '../../../src/generated/rw-lock.ts';
import { describe, eventually, rejects, uniqueName } from '../../helpers/describe.ts';
import { setup, sleep } from '../../helpers/fixture.ts';

const keysOf = (name: string) => {
  const hash = `relock:{${name}}:rw`;
  return {
    hash,
    leases: `${hash}:leases`,
    intents: `${hash}:intents`,
    waiting: `${hash}:waiting`,
    batch: `${hash}:batch`,
    fence: `${hash}:fence`,
    toReaders: `${hash}:to-readers`,
    toWriters: `${hash}:to-writers`,
  };
};
type K = ReturnType<typeof keysOf>;

describe('lua/rw-lock: every reply its headers list', (it) => {
  const s = setup(it);
  const run = (script: { source: string }, keys: string[], args: (string | number)[]) => s.f.admin.eval(script.source, keys.length, ...keys, ...args);
  const read = (k: K, owner: string, leaseMs = 30_000, waitId = `wait-${owner}`, writeOwner = '') =>
    run(lua.readAcquire, [k.hash, k.leases, k.intents, k.waiting, k.batch, k.fence], [owner, leaseMs, 60_000, waitId, writeOwner, 1_000]);
  const write = (k: K, owner: string, leaseMs = 30_000, waitId = `wait-${owner}`) =>
    run(lua.writeAcquire, [k.hash, k.leases, k.intents, k.batch, k.fence], [owner, leaseMs, 60_000, waitId, 1_500]);
  /** Redis TIME in milliseconds. */
  const time = async () => {
    const [seconds, micros] = (await s.f.admin.time()) as unknown as [string, string];
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };
  const release = (k: K, member: string, believed: number, whole: 0 | 1) =>
    run(lua.release, [k.hash, k.leases, k.waiting, k.batch, k.toReaders, k.toWriters, k.intents], [member, believed, whole, 'publish', 500]);

  it('read-acquire: a token; {0, ms} behind a writer (registered as waiting); the writer own context gets in', async () => {
    const k = keysOf(uniqueName('rw'));
    assert.ok(Number(await write(k, 'w:1')) > 0);
    const [flag, ms] = (await read(k, 'r:1')) as [number, number];
    assert.equal([flag, ms > 29_000 && ms <= 30_000], [0, true]);
    assert.equal(await s.f.admin.zrange(k.waiting, '0', '-1'), ['wait-r:1']);
    assert.ok(Number(await read(k, 'r:2', 30_000, 'wait-r:2', 'w:1')) > 0, 'downgrade');
  });

  const state = async (k: K) => [await s.f.admin.hgetall(k.hash), await s.f.admin.zrange(k.leases, '0', '-1', 'WITHSCORES'), await s.f.admin.exists(k.intents)];

  it('write-acquire: a new token for an owner that is the writer already (a resent attempt), nothing else written', async () => {
    const k = keysOf(uniqueName('rw'));
    const first = Number(await write(k, 'w:1'));
    const before = await state(k);
    assert.ok(Number(await write(k, 'w:1')) > first, 'the writer again: a token above the first');
    assert.equal(await state(k), before, 'its hold as it was, no intent');
  });

  it('read-acquire: a new token for an owner that holds a read hold already (a resent attempt), even behind an intent', async () => {
    const k = keysOf(uniqueName('rw'));
    const read1 = Number(await read(k, 'r:1'));
    assert.equal(((await write(k, 'w:2')) as number[])[0], 0, 'a writer refused by the reader leaves its intent');
    const held = await state(k);
    assert.ok(Number(await read(k, 'r:1')) > read1, 'the reader again, behind the intent: a token all the same');
    assert.equal(await state(k), held, 'its hold as it was');
    assert.equal(await s.f.admin.zrange(k.waiting, '0', '-1'), [], 'not registered as waiting');
  });

  it('read-acquire: {0, ms} behind a waiting writer intent, a token for a reader the read batch admitted', async () => {
    const k = keysOf(uniqueName('rw'));
    assert.ok(Number(await read(k, 'r:1')) > 0);
    const intent = (await write(k, 'w:1')) as number[];
    assert.equal([intent[0], intent[1]! > 29_000, intent[2]], [0, true, 1], 'the writer is refused and sets its intent');
    const [flag, ms] = (await read(k, 'r:2')) as [number, number];
    assert.equal([flag, ms > 1_000 && ms <= 1_500], [0, true]);
    await s.f.admin.zadd(k.batch, 1, 'wait-r:2');
    await s.f.admin.pexpire(k.batch, 500);
    const [refused] = (await read(k, 'r:3')) as [number];
    assert.is(refused, 0, 'a reader the batch did not admit waits behind the intent');
    assert.ok(Number(await read(k, 'r:2')) > 0, 'a reader the batch admitted passes the intent');
    assert.is(await s.f.admin.exists(k.batch), 0, 'and leaves the batch, which ends with its last reader');
  });

  it('write-acquire: a token; {0, ms, 0} behind a writer; {0, ms, 1} with an intent behind readers or a batch', async () => {
    const k = keysOf(uniqueName('rw'));
    assert.ok(Number(await write(k, 'w:1')) > 0);
    const behindWriter = (await write(k, 'w:2')) as number[];
    assert.equal([behindWriter[0], behindWriter[2]], [0, 0]);
    assert.is(await s.f.admin.exists(k.intents), 0, 'no intent behind a writer');
    await release(k, 'w:w:1', 1, 1);
    assert.ok(Number(await read(k, 'r:1')) > 0);
    const behindReaders = (await write(k, 'w:2')) as number[];
    assert.equal([behindReaders[0], behindReaders[2]], [0, 1]);
    assert.ok(behindReaders[1]! > 29_000);
    assert.equal(await s.f.admin.zrange(k.intents, '0', '-1'), ['wait-w:2']);
    await release(k, 'r:r:1', 1, 1);
    await s.f.admin.zadd(k.batch, 1, 'someone');
    await s.f.admin.pexpire(k.batch, 300);
    const behindBatch = (await write(k, 'w:2')) as number[];
    assert.equal([behindBatch[0], behindBatch[1]! <= 300, behindBatch[2]], [0, true, 1]);
    await sleep(350);
    assert.ok(Number(await write(k, 'w:2')) > 0);
    assert.is(await s.f.admin.exists(k.intents), 0, 'its intent went with the grant');
  });

  it('acquire: WRONGTYPE and FENCEOVERFLOW become their codes, and nothing is written', async () => {
    const name = uniqueName('rw');
    const k = keysOf(name);
    const rw = s.client.readWriteLock(name);
    await s.f.admin.set(k.hash, 'not a lock');
    assert.is((await rejects(rw.readLock().acquire({ waitMs: 0 }))).code, 'ERR_LOCK_WRONG_TYPE');
    assert.is((await rejects(rw.writeLock().acquire({ waitMs: 0 }))).code, 'ERR_LOCK_WRONG_TYPE');
    await s.f.admin.del(k.hash);
    await s.f.admin.set(k.fence, '9007199254740993');
    assert.is((await rejects(rw.readLock().acquire({ waitMs: 0 }))).code, 'ERR_LOCK_FENCE_OVERFLOW');
    await s.f.admin.set(k.fence, '12abc');
    assert.is((await rejects(rw.writeLock().acquire({ waitMs: 0 }))).code, 'ERR_LOCK_WRONG_TYPE');
    assert.is(await s.f.admin.exists(k.hash, k.leases, k.intents, k.waiting), 0);
  });

  it('reenter: n counted once per believed count, lengthening only; -1 for a hold gone or ended, never revived', async () => {
    const k = keysOf(uniqueName('rw'));
    await read(k, 'r:1', 1_000);
    assert.is(await run(lua.reenter, [k.hash, k.leases, k.fence], ['r:r:1', 0, 1]), 2);
    assert.is(await run(lua.reenter, [k.hash, k.leases, k.fence], ['r:r:1', 0, 1]), 2, 'a resent call is not counted twice');
    assert.is(await run(lua.reenter, [k.hash, k.leases, k.fence], ['r:r:1', 5_000, 2]), 3);
    assert.ok((await s.f.admin.pttl(k.hash)) > 4_000, 'lengthened');
    assert.is(await run(lua.reenter, [k.hash, k.leases, k.fence], ['r:r:1', 100, 3]), 4);
    assert.ok((await s.f.admin.pttl(k.hash)) > 4_000, 'never shortened');
    assert.is(await run(lua.reenter, [k.hash, k.leases, k.fence], ['r:nobody', 0, 1]), -1);
    await read(k, 'r:2', 30_000);
    await s.f.admin.zadd(k.leases, 1, 'r:r:2'); // ended, not yet pruned
    assert.is(await run(lua.reenter, [k.hash, k.leases, k.fence], ['r:r:2', 0, 1]), -1);
    assert.is(await s.f.admin.zscore(k.leases, 'r:r:2'), '1', 'not revived');
  });

  it('release: -1 for a hold gone, n for one level, 0 for the end; a write end turns the waiting readers into the batch and publishes to both sides', async () => {
    const k = keysOf(uniqueName('rw'));
    const listener = s.f.server.connect();
    const messages: string[] = [];
    listener.on('message', (channel: string, message: string) => void messages.push(`${channel.endsWith('readers') ? 'readers' : 'writers'} ${message}`));
    await listener.subscribe(k.toReaders, k.toWriters);
    assert.is(await release(k, 'w:nobody', 1, 1), -1);
    await write(k, 'w:1');
    await run(lua.reenter, [k.hash, k.leases, k.fence], ['w:w:1', 0, 1]);
    assert.is(await release(k, 'w:w:1', 2, 0), 1);
    assert.is(await release(k, 'w:w:1', 2, 0), 1, 'a resent one-level release changes nothing');
    await read(k, 'r:1'); // refused: registered
    assert.is(await release(k, 'w:w:1', 1, 0), 0);
    assert.equal(await s.f.admin.zrange(k.batch, '0', '-1'), ['wait-r:1']);
    const batchTtl = await s.f.admin.pttl(k.batch);
    assert.ok(batchTtl > 0 && batchTtl <= 500);
    assert.is(await s.f.admin.exists(k.waiting, k.hash, k.leases), 0);
    await read(k, 'r:1');
    assert.is(await s.f.admin.exists(k.batch), 0, 'the batch ends when its last reader got in');
    await read(k, 'r:2');
    assert.is(await release(k, 'r:r:1', 1, 1), 0);
    assert.is(await release(k, 'r:r:2', 1, 1), 0);
    await eventually(() => messages.length >= 3, 'the three messages');
    await sleep(50); // nothing more arrives
    assert.equal(messages, ['readers write', 'writers write', 'writers read']);
    listener.disconnect();
  });

  it('release: a write end with readers waiting and a live intent wakes only the readers; the last reader wakes the writer', async () => {
    const k = keysOf(uniqueName('rw'));
    const listener = s.f.server.connect();
    const messages: string[] = [];
    listener.on('message', (channel: string, message: string) => void messages.push(`${channel.endsWith('readers') ? 'readers' : 'writers'} ${message}`));
    await listener.subscribe(k.toReaders, k.toWriters);
    await read(k, 'r:0');
    const [, , intent] = (await write(k, 'w:2')) as number[]; // refused by the reader: its intent
    assert.is(intent, 1);
    await release(k, 'r:r:0', 1, 1);
    await write(k, 'w:1');
    const [flag, hintMs, renews] = (await write(k, 'w:2')) as number[]; // refused by the writer
    assert.equal([flag, renews], [0, 0]);
    assert.ok(hintMs! <= 1_500, `a writer with an intent wakes when it ends, not at the writer's lease end (${hintMs} ms)`);
    await read(k, 'r:1'); // refused: registered
    messages.length = 0;
    assert.is(await release(k, 'w:w:1', 1, 1), 0);
    assert.ok(Number(await read(k, 'r:1')) > 0, 'the admitted reader');
    assert.is(await release(k, 'r:r:1', 1, 1), 0);
    await eventually(() => messages.length >= 2, 'the two messages');
    await sleep(50); // nothing more arrives
    assert.equal(messages, ['readers write', 'writers read']);
    listener.disconnect();
  });

  it('force-release: 0 when the side has no live hold; 1 removing that side only', async () => {
    const k = keysOf(uniqueName('rw'));
    const force = (side: 'r' | 'w') => run(lua.forceRelease, [k.hash, k.leases, k.waiting, k.batch, k.toReaders, k.toWriters], [side, 'publish', 500]);
    assert.is(await force('w'), 0);
    await write(k, 'w:1');
    await read(k, 'r:1', 30_000, 'x', 'w:1');
    assert.is(await force('r'), 1);
    assert.is(await s.f.admin.hget(k.hash, 'w:w:1'), '1');
    assert.is(await force('r'), 0);
    assert.is(await force('w'), 1);
    assert.is(await s.f.admin.exists(k.hash, k.leases), 0);
  });

  it('leave: how many channels it published (0, 1 or 2), removing the wait id everywhere', async () => {
    const k = keysOf(uniqueName('rw'));
    const leave = (id: string) => run(lua.leave, [k.intents, k.waiting, k.batch, k.toReaders, k.toWriters], [id, 'publish']);
    assert.is(await leave('nobody'), 0);
    await s.f.admin.zadd(k.intents, Date.now() + 10_000, 'a', Date.now() + 10_000, 'b');
    assert.is(await leave('a'), 0, 'another intent is left');
    assert.is(await leave('b'), 1);
    await s.f.admin.zadd(k.intents, Date.now() + 10_000, 'c');
    await s.f.admin.zadd(k.batch, 1, 'c');
    await s.f.admin.zadd(k.waiting, 1, 'c');
    assert.is(await leave('c'), 2);
    assert.is(await s.f.admin.exists(k.intents, k.batch, k.waiting), 0);
  });

  it('renew: 1 for a live hold, 0 for one that ended or a key of another type, never reviving it', async () => {
    const k = keysOf(uniqueName('rw'));
    const wrong = keysOf(uniqueName('rw'));
    await read(k, 'r:1', 200);
    await read(k, 'r:2', 30_000);
    await s.f.admin.zadd(k.leases, 1, 'r:r:3');
    await s.f.admin.hset(k.hash, 'r:r:3', 1);
    await s.f.admin.set(wrong.leases, 'x');
    const keys = [k.hash, k.leases, k.hash, k.leases, k.hash, k.leases, wrong.hash, wrong.leases];
    assert.equal(await run(lua.renew, keys, [1_000, 'r:r:1', 'r:r:2', 'r:r:3', 'r:r:1']), [1, 1, 0, 0]);
    assert.is(await s.f.admin.zscore(k.leases, 'r:r:3'), '1');
    assert.ok(Number(await s.f.admin.zscore(k.leases, 'r:r:2')) > (await time()) + 29_000, 'GT: never shortened');
    assert.ok((await s.f.admin.pttl(k.hash)) > 29_000);
  });

  it('inspect: {locked, ttl, count} per side, a lease past its end counting as gone', async () => {
    const k = keysOf(uniqueName('rw'));
    const inspect = (side: 'r' | 'w', member = '') => run(lua.inspect, [k.hash, k.leases], [side, member]);
    assert.equal(await inspect('r'), [0, -2, 0]);
    await write(k, 'w:1');
    await read(k, 'r:1', 100, 'x', 'w:1');
    const [locked, ttl, count] = (await inspect('w', 'w:w:1')) as number[];
    assert.equal([locked, ttl! > 29_000, count], [1, true, 1]);
    assert.equal(((await inspect('r', 'r:r:1')) as number[]).map((v, i) => (i === 1 ? v > 0 : v)), [1, true, 1]);
    await sleep(150);
    assert.equal(await inspect('r', 'r:r:1'), [0, -2, 0]);
  });

  it('keeps its keys apart from lock(name) of the same name', async () => {
    const name = uniqueName('rw');
    const write = await s.client.readWriteLock(name).writeLock().acquire();
    const lock = await s.client.lock(name).acquire({ waitMs: 0 });
    await lock.release();
    await write.release();
  });
});
