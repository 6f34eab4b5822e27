// Compile-time checks of the public types (`npm run typecheck` compiles this file under
// exactOptionalPropertyTypes), and the runtime facts they describe.
import * as assert from 'uvu/assert';
import { Redis } from 'ioredis';
import { LockClient, LockError, type AcquireOptions, type LockClientOptions, type LockErrorCode, type RedisConnectionOptions } from '../../src/index.ts';
import { describe } from '../helpers/describe.ts';

// Optional option properties take `undefined` (exactOptionalPropertyTypes), as spread configs produce it.
const fromEnv: LockClientOptions = { redis: undefined, prefix: undefined, leaseMs: undefined, fenceTtlMs: undefined };
const acquireOptions: AcquireOptions = { waitMs: undefined, leaseMs: undefined, signal: undefined };
// RedisConnectionOptions is ioredis' own options type: its fields autocomplete...
const connection: RedisConnectionOptions = { host: '127.0.0.1', port: 6379, connectTimeout: 500, maxRetriesPerRequest: 1 };
// @ts-expect-error ...and a typo is rejected.
const typo: RedisConnectionOptions = { hots: '127.0.0.1' };
// @ts-expect-error keyPrefix is refused by the type too (use `prefix`).
const prefixed: RedisConnectionOptions = { keyPrefix: 'app:' };
// @ts-expect-error a code outside the union does not type-check.
const unknownCode: LockErrorCode = 'ERR_SOMETHING';

describe('Public types', (it) => {
  it('accepts undefined option properties at run time too', async () => {
    const client = new LockClient({ ...fromEnv, redis: new Redis({ lazyConnect: true, port: 1 }) });
    assert.is(client.prefix, 'relock');
    assert.is(client.leaseMs, 30_000);
    assert.ok(acquireOptions);
    await client.close();
  });

  it('types the client events: error gets an Error, warning a LockError with a code', async () => {
    const client = new LockClient({ redis: new Redis({ lazyConnect: true, port: 1 }) });
    const codes: LockErrorCode[] = [];
    client.on('warning', (warning) => codes.push(warning.code));
    client.on('error', (error) => assert.instance(error, Error));
    // @ts-expect-error there is no such event.
    client.on('warnings', () => undefined);
    client.emit('warning', new LockError('x', { code: 'ERR_LOCK_SELF_WAIT' }));
    assert.equal(codes, ['ERR_LOCK_SELF_WAIT']);
    await client.close();
  });

  it('keeps the compile-time fixtures reachable', () => {
    assert.ok(connection && typo && prefixed && unknownCode);
  });
});
