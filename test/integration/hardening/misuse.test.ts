// Bad input and misuse of every public entry, against a real Redis: each gets a clear error that
// names the problem, nothing reaches Redis, the lock's keys are left as they were, and the client
// keeps working for other locks.
import * as assert from 'uvu/assert';
import { LockClient, LockError, LockNotHeldError, type Lease, type Lock } from '../../../src/index.ts';
import { describe, rejects, uniqueName } from '../../helpers/describe.ts';
import { commandStats, setup } from '../../helpers/fixture.ts';
import { assertClosedBeforeCall } from '../../helpers/closed.ts';

/** A value of a bad kind, and how an error message shows it. */
interface Bad {
  readonly label: string;
  readonly value: unknown;
  /** What the message must contain to show the value (its text, or its type). */
  readonly shown: string;
}

const nonNumbers: Bad[] = [
  { label: 'a numeric string', value: '100', shown: '`"100"` (string)' },
  { label: 'a boolean', value: true, shown: '`true` (boolean)' },
  { label: 'null', value: null, shown: '`null` (null)' },
  { label: 'an object', value: { ms: 100 }, shown: '(object)' },
  { label: 'an array', value: [100], shown: '(array)' },
  { label: 'a bigint', value: 100n, shown: '(bigint)' },
  { label: 'a symbol', value: Symbol('ms'), shown: '(symbol)' },
  { label: 'a function', value: () => 100, shown: '(function)' },
  { label: 'a Number object', value: Object(100), shown: '(object)' },
];

const badNumbers: Bad[] = [
  { label: 'negative', value: -1, shown: '`-1`' },
  { label: 'NaN', value: Number.NaN, shown: '`NaN`' },
  { label: '-Infinity', value: Number.NEGATIVE_INFINITY, shown: '`-Infinity`' },
  { label: 'huge (2^31)', value: 2 ** 31, shown: '`2147483648`' },
  { label: 'huge (1e308)', value: 1e308, shown: '`1e+308`' },
  { label: 'beyond safe integers', value: 2 ** 53 + 2, shown: '`9007199254740994`' },
];

const fractions: Bad[] = [{ label: 'fractional', value: 1.5, shown: '`1.5`' }];
const infinity: Bad[] = [{ label: 'Infinity', value: Number.POSITIVE_INFINITY, shown: '`Infinity`' }];
const zero: Bad[] = [{ label: 'zero', value: 0, shown: '`0`' }];

const nonStrings: Bad[] = [
  { label: 'a number', value: 42, shown: '`42` (number)' },
  { label: 'a boolean', value: false, shown: '`false` (boolean)' },
  { label: 'null', value: null, shown: '`null` (null)' },
  { label: 'an object', value: { name: 'x' }, shown: '(object)' },
  { label: 'an array', value: ['x'], shown: '(array)' },
  { label: 'a symbol', value: Symbol('name'), shown: '(symbol)' },
  { label: 'a String object', value: Object('x'), shown: '(object)' },
];

const badStrings: Bad[] = [
  { label: 'empty', value: '', shown: '`""`' },
  { label: '1025 ASCII bytes long', value: 'x'.repeat(1025), shown: 'it has 1025' },
  { label: '1026 UTF-8 bytes long (513 "é")', value: 'é'.repeat(513), shown: 'it has 1026' },
];

const nonObjects: Bad[] = [
  { label: 'a string', value: 'fast', shown: '`"fast"` (string)' },
  { label: 'a number', value: 5, shown: '`5` (number)' },
  { label: 'null', value: null, shown: '`null` (null)' },
  { label: 'an array', value: [], shown: '`[]` (array)' },
];

const nonFunctions: Bad[] = [
  { label: 'missing', value: undefined, shown: '(undefined)' },
  { label: 'a string', value: 'run', shown: '`"run"` (string)' },
  { label: 'an object', value: {}, shown: '`{}` (object)' },
  { label: 'a promise', value: Promise.resolve(1), shown: '(object)' },
];

const nonSignals: Bad[] = [
  { label: 'an object', value: { aborted: false }, shown: '(object)' },
  { label: 'an AbortController', value: new AbortController(), shown: '(object)' },
  { label: 'a boolean', value: true, shown: '`true` (boolean)' },
];

type ErrorClass = typeof TypeError | typeof RangeError;

/** One row: a public entry called with one bad argument. */
interface Row {
  readonly entry: string;
  readonly argument: string;
  readonly bad: Bad;
  readonly error: ErrorClass;
  /** Calls the entry on `lock` (a fresh lock, or a lease of one when the entry is a lease's). */
  call(context: { client: LockClient; lock: Lock; lease: () => Promise<Lease> }, value: unknown): unknown;
}

function rows(
  entry: string,
  argument: string,
  call: Row['call'],
  groups: readonly (readonly [readonly Bad[], ErrorClass])[],
): Row[] {
  return groups.flatMap(([bads, error]) => bads.map((bad) => ({ entry, argument, bad, error, call })));
}

const msGroups = (min: 0 | 1 | 3): (readonly [readonly Bad[], ErrorClass])[] => [
  [nonNumbers, TypeError],
  [badNumbers, RangeError],
  [fractions, RangeError],
  [infinity, RangeError],
  ...(min > 0 ? [[zero, RangeError] as const] : []),
];

const table: Row[] = [
  ...rows('new LockClient(options)', 'LockClient options', ({ client }, value) => new LockClient(value as never) && client, [[nonObjects, TypeError]]),
  ...rows('new LockClient({ leaseMs })', 'leaseMs', (_, value) => new LockClient({ redis: 'redis://127.0.0.1:1', leaseMs: value as number }), msGroups(3)),
  // fenceTtlMs is no timer: it may reach a year, so 2^31 ms is fine there.
  ...rows('new LockClient({ fenceTtlMs })', 'fenceTtlMs', (_, value) => new LockClient({ redis: 'redis://127.0.0.1:1', fenceTtlMs: value as number }), [
    [nonNumbers, TypeError],
    [badNumbers.filter((b) => b.value !== 2 ** 31), RangeError],
    [fractions, RangeError],
    [infinity, RangeError],
    [zero, RangeError],
  ]),
  ...rows('new LockClient({ prefix })', 'prefix', (_, value) => new LockClient({ redis: 'redis://127.0.0.1:1', prefix: value as string }), [
    [nonStrings, TypeError],
    [[badStrings[0]!, { label: '1025 bytes long', value: 'p'.repeat(1025), shown: '`"pppp' }], RangeError],
  ]),
  ...rows('new LockClient({ redis })', 'redis', (_, value) => new LockClient({ redis: value as string }), [
    [
      [
        { label: 'a number', value: 6379, shown: '`6379` (number)' },
        { label: 'a host:port string', value: '127.0.0.1:6379', shown: '"127.0.0.1:6379"' },
        { label: 'an empty string', value: '', shown: '`""`' },
        { label: 'options with keyPrefix', value: { keyPrefix: 'app:' }, shown: 'keyPrefix' },
      ],
      TypeError,
    ],
    // An array is Redlock's: 3 independent servers at least (test/integration/redlock/).
    [[{ label: 'an array of 1', value: ['redis://127.0.0.1:1'], shown: 'an array of 1' }], RangeError],
  ]),
  ...rows('client.lock(name)', 'name', ({ client }, value) => client.lock(value as string), [
    [[...nonStrings, { label: 'missing', value: undefined, shown: '(undefined)' }], TypeError],
    [badStrings, RangeError],
  ]),
  ...rows('lock.acquire(options)', 'acquire() options', ({ lock }, value) => lock.acquire(value as never), [[nonObjects, TypeError]]),
  ...rows('lock.acquire({ waitMs })', 'waitMs', ({ lock }, value) => lock.acquire({ waitMs: value as number }), [
    [nonNumbers, TypeError],
    [badNumbers, RangeError],
  ]),
  ...rows('lock.acquire({ leaseMs })', 'leaseMs', ({ lock }, value) => lock.acquire({ leaseMs: value as number }), msGroups(1)),
  ...rows('lock.acquire({ signal })', 'signal', ({ lock }, value) => lock.acquire({ signal: value as AbortSignal }), [[nonSignals, TypeError]]),
  ...rows('lock.tryAcquire(options)', 'tryAcquire() options', ({ lock }, value) => lock.tryAcquire(value as never), [[nonObjects, TypeError]]),
  ...rows('lock.tryAcquire({ leaseMs })', 'leaseMs', ({ lock }, value) => lock.tryAcquire({ leaseMs: value as number }), msGroups(1)),
  ...rows('lock.runExclusive(fn)', 'fn', ({ lock }, value) => lock.runExclusive(value as never), [[nonFunctions, TypeError]]),
  ...rows('lock.runExclusive(fn, { waitMs })', 'waitMs', ({ lock }, value) => lock.runExclusive(() => 1, { waitMs: value as number }), [
    [nonNumbers, TypeError],
    [badNumbers, RangeError],
  ]),
  ...rows('lock.runExclusive(fn, { leaseMs })', 'leaseMs', ({ lock }, value) => lock.runExclusive(() => 1, { leaseMs: value as number }), msGroups(1)),
  ...rows('lease.run(fn)', 'fn', async ({ lease }, value) => (await lease()).run(value as never), [[nonFunctions, TypeError]]),
];

/** The error a call threw or rejected with. */
async function failure(call: () => unknown): Promise<Error> {
  return rejects(Promise.resolve().then(call));
}

describe('Bad input to every public entry', (it) => {
  const s = setup(it);
  const leases: Lease[] = [];

  for (const row of table) {
    it(`${row.entry}: ${row.argument} ${row.bad.label} is a ${row.error.name} that names it, and nothing reaches Redis`, async () => {
      const name = uniqueName('misuse');
      const lock = s.client.lock(name);
      // A lease for the lease entries is taken before the counts, so only the bad call is measured.
      const lease = row.entry.startsWith('lease.') ? await lock.acquire() : undefined;
      if (lease) leases.push(lease);
      const before = await commandStats(s.f.admin);
      const error = await failure(() => row.call({ client: s.client, lock, lease: async () => lease! }, row.bad.value));
      const after = await commandStats(s.f.admin);

      assert.instance(error, row.error);
      assert.ok(error.message.includes(`\`${row.argument}\``), `the message names \`${row.argument}\`: ${error.message}`);
      assert.ok(error.message.includes(row.bad.shown), `the message shows ${row.bad.shown}: ${error.message}`);
      for (const command of ['evalsha', 'eval', 'subscribe', 'exists', 'pttl', 'hget']) {
        assert.is(after[command] ?? 0, before[command] ?? 0, `no ${command} was sent`);
      }
      if (!lease) assert.is(await s.f.admin.exists(`relock:{${name}}`, `relock:{${name}}:fence`), 0, 'no key was written');
      if (lease) await lease.release();

      // The client keeps working for other locks.
      const other = await s.client.lock(uniqueName('after-misuse')).acquire({ waitMs: 2_000 });
      await other.release();
    });
  }

  it('a second release() of one lease rejects with LockNotHeldError, and the lock stays free for others', async () => {
    const lock = s.client.lock(uniqueName());
    const lease = await lock.acquire();
    await lease.release();
    const error = await rejects(lease.release());
    assert.instance(error, LockNotHeldError);
    assert.is(error.code, 'ERR_LOCK_NOT_HELD');
    assert.match(error.message, /released already/);
    const next = await s.other.lock(lock.name).acquire({ waitMs: 0 });
    await next.release();
  });

  it('a release() of a lease force-unlocked and taken by another rejects, and leaves the new holder alone', async () => {
    const name = uniqueName();
    const lease = await s.client.lock(name).acquire();
    await s.other.lock(name).forceUnlock();
    const taken = await s.other.lock(name).acquire({ waitMs: 0 });
    const error = await rejects(lease.release());
    assert.instance(error, LockNotHeldError);
    assert.ok(await s.other.lock(name).isLocked(), 'the new holder still holds it');
    await taken.release();
  });

  it('disposing a lease after release() is a no-op', async () => {
    const lease = await s.client.lock(uniqueName()).acquire();
    await lease.release();
    await lease[Symbol.asyncDispose]();
  });

  it('every method of a closed client rejects clearly, without I/O', async () => {
    const closed = s.f.client();
    const lock = closed.lock(uniqueName());
    await closed.close();
    assertClosedBeforeCall(await rejects(lock.acquire()), 'acquire()');
    assertClosedBeforeCall(await rejects(lock.tryAcquire()), 'tryAcquire()');
    assertClosedBeforeCall(await rejects(lock.runExclusive(() => 1)), 'runExclusive()');
  });

  it.after(async () => {
    for (const lease of leases) await lease.release().catch(() => undefined);
  });
});

/** How the Redis key looked, to compare before and after. */
async function snapshot(admin: import('ioredis').Redis, key: string): Promise<string> {
  const type = await admin.type(key);
  const pttl = await admin.pttl(key);
  const value = type === 'string' ? await admin.get(key) : type === 'list' ? JSON.stringify(await admin.lrange(key, 0, -1)) : type;
  return JSON.stringify({ type, pttl: pttl === -1 ? -1 : 'set', value });
}

interface Occupant {
  readonly label: string;
  /** Which of the lock's keys holds the foreign value. */
  readonly key: 'lock' | 'fence';
  write(admin: import('ioredis').Redis, key: string): Promise<unknown>;
}

const occupants: Occupant[] = [
  { label: 'the lock key holds a string', key: 'lock', write: (admin, key) => admin.set(key, 'user data') },
  { label: 'the lock key holds a list', key: 'lock', write: (admin, key) => admin.rpush(key, 'a', 'b') },
  { label: 'the fence key holds a list', key: 'fence', write: (admin, key) => admin.rpush(key, 'a') },
  { label: 'the fence key holds a non-number string', key: 'fence', write: (admin, key) => admin.set(key, 'not a token') },
];

type Entry = readonly [label: string, call: (lock: Lock) => Promise<unknown>];

const entries: Entry[] = [
  ['acquire()', (lock) => lock.acquire()],
  ['acquire({ waitMs: 200 })', (lock) => lock.acquire({ waitMs: 200 })],
  ['acquire({ leaseMs: 1000 })', (lock) => lock.acquire({ leaseMs: 1_000 })],
  ['tryAcquire()', (lock) => lock.tryAcquire()],
  ['runExclusive(fn)', (lock) => lock.runExclusive(() => assert.unreachable('fn must not run'))],
];

/** Entries that only read or delete the lock key: only a wrong-typed lock key concerns them. */
const lockKeyEntries: Entry[] = [
  ['forceUnlock()', (lock) => lock.forceUnlock()],
  ['isLocked()', (lock) => lock.isLocked()],
  ['remainingTtlMs()', (lock) => lock.remainingTtlMs()],
];

describe('Lock keys of the wrong Redis type', (it) => {
  const s = setup(it);

  for (const occupant of occupants) {
    for (const [label, call] of occupant.key === 'lock' ? [...entries, ...lockKeyEntries] : entries) {
      it(`${label} when ${occupant.label}: a LockError that names the key and WRONGTYPE, and the key is untouched`, async () => {
        const name = uniqueName('wrongtype');
        const lockKey = `relock:{${name}}`;
        const fenceKey = `${lockKey}:fence`;
        const foreign = occupant.key === 'lock' ? lockKey : fenceKey;
        const other = occupant.key === 'lock' ? fenceKey : lockKey;
        await occupant.write(s.f.admin, foreign);
        const before = await snapshot(s.f.admin, foreign);

        const error = await rejects(call(s.client.lock(name)));
        assert.instance(error, LockError, `${label} rejects with a LockError, not ${error?.name}: ${error?.message}`);
        assert.ok(error.message.includes(foreign), `the message names the key: ${error.message}`);
        assert.match(error.message, /WRONGTYPE|not a number|not relock/);
        assert.is(await snapshot(s.f.admin, foreign), before, 'the foreign key is untouched');
        assert.is(await s.f.admin.exists(other), 0, 'nothing was written next to it');

        const lease = await s.client.lock(uniqueName()).acquire({ waitMs: 2_000 });
        await lease.release();
        await s.f.admin.del(foreign);
      });
    }
  }

  it('a lock key overwritten while held: release() names WRONGTYPE and leaves the value; the signal aborts', async () => {
    const name = uniqueName();
    const client = s.f.client({ leaseMs: 600 });
    const errors: Error[] = [];
    client.on('error', (error: Error) => errors.push(error));
    const lease = await client.lock(name).acquire();
    await s.f.admin.set(`relock:{${name}}`, 'overwritten');
    const lost = new Promise((resolve) => lease.signal.addEventListener('abort', resolve, { once: true }));
    await lost;
    assert.is(lease.signal.reason.code, 'ERR_LOCK_LOST');
    const error = await rejects(lease.release());
    assert.instance(error, LockError);
    assert.is(await s.f.admin.get(`relock:{${name}}`), 'overwritten');
    const again = await client.lock(uniqueName()).acquire();
    await again.release();
  });
});
