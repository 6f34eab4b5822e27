// A project with ioredis: its connection options are checked.
import Redis from 'ioredis';
import { LockClient } from 'relock';

export function clients(): LockClient[] {
  return [
    new LockClient({ redis: { host: 'redis.internal', port: 6380, connectTimeout: 1_000 } }),
    new LockClient({ redis: 'redis://127.0.0.1:6390', ioredis: Redis }),
    // @ts-expect-error -- hots is no ioredis option
    new LockClient({ redis: { hots: 'redis.internal' } }),
    // @ts-expect-error -- a port is a number
    new LockClient({ redis: { port: '6380' } }),
  ];
}
