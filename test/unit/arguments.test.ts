import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { LockClient, type Lock } from '../../src/index.ts';
import { describe, rejects } from '../helpers/describe.ts';

// A client that never connects: any I/O would queue on it and the assertions below would see it.
const redis = new Redis({ lazyConnect: true, enableOfflineQueue: true, port: 1 });
const client = new LockClient({ redis });
const lock = client.lock('valid');
const noIo = () => assert.is(redis.status, 'wait', 'no connection was attempted');

/** What `createClient().connect()` returns: a promise (of a client that never connects here). */
function connecting(): Promise<unknown> {
  const pending = createClient({ url: 'redis://127.0.0.1:1', socket: { reconnectStrategy: false } }).connect();
  pending.catch(() => undefined);
  return pending;
}

type Case = [label: string, call: () => unknown, error: typeof TypeError | typeof RangeError, mentions: string];

const cases: Case[] = [
  ['LockClient options not an object', () => new LockClient(42 as never), TypeError, 'LockClient options'],
  ['LockClient unknown option', () => new LockClient({ lease: 5 } as never), TypeError, '`lease`'],
  ['redis a number', () => new LockClient({ redis: 6379 as never }), TypeError, '`redis`'],
  ['redis not a URL', () => new LockClient({ redis: 'localhost:6379' }), TypeError, '"localhost:6379"'],
  ['redis with keyPrefix', () => new LockClient({ redis: new Redis({ lazyConnect: true, keyPrefix: 'app:' }) }), TypeError, '`prefix`'],
  ['redis options with keyPrefix', () => new LockClient({ redis: { keyPrefix: 'app:' } as never }), TypeError, 'keyPrefix'],
  // A node-redis client is a client now (issue 19); mixing URLs and clients among Redlock masters is not.
  ['redis a node-redis client among Redlock URLs', () => new LockClient({ redis: ['redis://127.0.0.1:1', createClient(), 'redis://127.0.0.1:2'] }), TypeError, 'all URLs/options or all clients'],
  ['redis a node-redis Cluster among Redlock masters', () => new LockClient({ redis: [createClient(), createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] }), createClient()] }), TypeError, 'cannot be a Cluster'],
  ['redis a class named GlideClient without GLIDE methods', () => new LockClient({ redis: new (class GlideClient {})() as never }), TypeError, '2.3 or later'],
  // GLIDE 1.x (and 2.0-2.2): customCommand and the pub/sub queue, but subscriptions fixed at creation.
  ['redis a GLIDE 1.x client', () => new LockClient({ redis: new (class GlideClient { customCommand() {} getPubSubMessage() {} })() as never }), TypeError, '@valkey/valkey-glide 2.3 or later'],
  ['redis a GLIDE client keeping no configuration', () => new LockClient({ redis: new (class GlideClient { customCommand() {} getPubSubMessage() {} subscribeLazy() {} getSubscriptions() {} })() as never }), TypeError, 'config.addresses'],
  ['redis an instance of another class', () => new LockClient({ redis: new Map() as never }), TypeError, 'an instance of Map'],
  // Issue 31, point 5: `redis: createClient().connect()` without await (it said "an instance of Promise").
  ['redis a node-redis connect() promise (no await)', () => new LockClient({ redis: connecting() as never }), TypeError, 'got a Promise: did you forget await?'],
  ['redis a connect() promise among Redlock masters', () => new LockClient({ redis: [connecting(), connecting(), connecting()] as never }), TypeError, 'did you forget await?'],
  ['ioredis a node-redis client instead of the module', () => new LockClient({ redis: 'redis://127.0.0.1:1', ioredis: createClient() as never }), TypeError, '`ioredis`'],
  ['ioredis a string', () => new LockClient({ ioredis: 'ioredis' as never }), TypeError, '`ioredis`'],
  ['ioredis a class that is no ioredis', () => new LockClient({ ioredis: class Redis {} as never }), TypeError, '`ioredis`'],
  ['redis options with a key no ioredis option has', () => new LockClient({ redis: { hots: '10.0.0.1', port: 6380 } as never }), TypeError, '`hots`'],
  ['redis options spread from an ioredis client', () => new LockClient({ redis: { ...new Redis({ lazyConnect: true }) } as never }), TypeError, '`redis` options to hold ioredis options only'],
  ['prefix empty', () => new LockClient({ redis, prefix: '' }), RangeError, '`prefix`'],
  ['prefix a number', () => new LockClient({ redis, prefix: 1 as never }), TypeError, '`prefix`'],
  ['leaseMs negative', () => new LockClient({ redis, leaseMs: -1 }), RangeError, '`-1`'],
  ['leaseMs NaN', () => new LockClient({ redis, leaseMs: Number.NaN }), RangeError, '`NaN`'],
  ['leaseMs Infinity', () => new LockClient({ redis, leaseMs: Number.POSITIVE_INFINITY }), RangeError, '`Infinity`'],
  ['leaseMs fractional', () => new LockClient({ redis, leaseMs: 1.5 }), RangeError, '`1.5`'],
  ['leaseMs huge', () => new LockClient({ redis, leaseMs: 2 ** 31 }), RangeError, '`leaseMs`'],
  ['leaseMs a string', () => new LockClient({ redis, leaseMs: '30000' as never }), TypeError, '`"30000"` (string)'],
  ['fenceTtlMs zero', () => new LockClient({ redis, fenceTtlMs: 0 }), RangeError, '`fenceTtlMs`'],
  ['name missing', () => client.lock(undefined as never), TypeError, '`name`'],
  ['name empty', () => client.lock(''), RangeError, '`name`'],
  ['name a number', () => client.lock(42 as never), TypeError, '`42` (number)'],
  ['name over 1024 bytes', () => client.lock('é'.repeat(513)), RangeError, '1026'],
];

const asyncCases: Case[] = [
  ['acquire options not an object', () => lock.acquire('fast' as never), TypeError, 'acquire() options'],
  ['acquire unknown option', () => lock.acquire({ timeout: 5 } as never), TypeError, '`timeout`'],
  ['waitMs negative', () => lock.acquire({ waitMs: -1 }), RangeError, 'Expected `waitMs` to be a non-negative number of milliseconds up to 2147483647, or Infinity, got `-1` (number)'],
  ['waitMs NaN', () => lock.acquire({ waitMs: Number.NaN }), RangeError, '`waitMs`'],
  ['waitMs huge', () => lock.acquire({ waitMs: 2 ** 40 }), RangeError, '`waitMs`'],
  ['waitMs a string', () => lock.acquire({ waitMs: '10' as never }), TypeError, '`waitMs`'],
  ['leaseMs zero', () => lock.acquire({ leaseMs: 0 }), RangeError, '`leaseMs`'],
  ['leaseMs Infinity', () => lock.acquire({ leaseMs: Number.POSITIVE_INFINITY }), RangeError, '`leaseMs`'],
  ['signal not an AbortSignal', () => lock.acquire({ signal: {} as never }), TypeError, '`signal`'],
  ['tryAcquire waitMs (not an option)', () => lock.tryAcquire({ waitMs: 0 } as never), TypeError, '`waitMs`'],
  ['tryAcquire leaseMs negative', () => lock.tryAcquire({ leaseMs: -5 }), RangeError, '`leaseMs`'],
  ['runExclusive without fn', () => (lock as Lock).runExclusive(undefined as never), TypeError, '`fn`'],
  ['runExclusive bad options', () => lock.runExclusive(() => 1, { waitMs: -1 }), RangeError, '`waitMs`'],
];

describe('Bad arguments', (it) => {
  for (const [label, call, ErrorClass, mentions] of cases) {
    it(`throws ${ErrorClass.name} for ${label}, before any I/O`, () => {
      const error = (() => {
        try {
          call();
        } catch (caught) {
          return caught as Error;
        }
        throw new Error('did not throw');
      })();
      assert.instance(error, ErrorClass);
      assert.ok(error.message.includes(mentions), error.message);
      noIo();
    });
  }
  for (const [label, call, ErrorClass, mentions] of asyncCases) {
    it(`rejects with ${ErrorClass.name} for ${label}, before any I/O`, async () => {
      const error = await rejects(Promise.resolve().then(call));
      assert.instance(error, ErrorClass);
      assert.ok(error.message.includes(mentions), error.message);
      noIo();
    });
  }
  it.after(() => client.close());
});
