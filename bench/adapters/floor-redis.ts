// What the two floors share: the least a correct lock can cost on one Redis. SET NX PX to take it,
// a Lua compare-and-delete (by EVALSHA) to give it back.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { LEASE_MS, RETRY_MS, type LockAdapter } from './types.ts';

export const COMPARE_AND_DELETE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;
const COMPARE_DELETE_PUBLISH = `if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('del', KEYS[1])
  redis.call('publish', KEYS[2], '1')
  return 1
end
return 0`;

export interface FloorRedis extends Redis {
  compareAndDelete(key: string, token: string): Promise<number>;
  compareDeletePublish(key: string, channel: string, token: string): Promise<number>;
}

export function connect(url: string): FloorRedis {
  const redis = new Redis(url) as FloorRedis;
  // defineCommand sends EVALSHA, and EVAL once on NOSCRIPT.
  redis.defineCommand('compareAndDelete', { numberOfKeys: 1, lua: COMPARE_AND_DELETE });
  redis.defineCommand('compareDeletePublish', { numberOfKeys: 2, lua: COMPARE_DELETE_PUBLISH });
  return redis;
}

export const lockKey = (name: string) => `floor:{${name}}`;
export const channelOf = (name: string) => `floor:{${name}}:released`;

/**
 * floor-poll's loop over any client's raw commands (`send`, as relock sends its scripts over that
 * client): SET NX PX, retried every RETRY_MS; the release by EVALSHA of COMPARE_AND_DELETE.
 */
export async function floorOver(send: (args: string[]) => Promise<unknown>, close: () => Promise<unknown>): Promise<LockAdapter> {
  const sha = String(await send(['SCRIPT', 'LOAD', COMPARE_AND_DELETE]));
  return {
    async acquire(name) {
      const key = lockKey(name);
      const token = randomUUID();
      while (String(await send(['SET', key, token, 'PX', String(LEASE_MS), 'NX'])) !== 'OK') await sleep(RETRY_MS);
      return { release: async () => void (await send(['EVALSHA', sha, '1', key, token])) };
    },
    close: async () => void (await close()),
  };
}
