// A floor of relock's own: its two scripts, sent through its own script runner and LockCommands on
// one ioredis connection, without the Lock/Lease layer (options, async context, watchdog, queues).
// Set beside relock in scenario 1, it splits relock's cost into "the scripts" and "the library
// around them".
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { LockCommands } from '../../src/lock/commands.ts';
import { lockKeys } from '../../src/lock/keys.ts';
import { ioredisPort, type RedisClient } from '../../src/port/ioredis.ts';
import { ScriptRunner } from '../../src/runtime/script.ts';
import { LEASE_MS, RETRY_MS, type Create } from './types.ts';

/** relock's default fencing-key lifetime. */
const FENCE_TTL_MS = 3_600_000;

export const create: Create = async (url) => {
  const redis = new Redis(url);
  const commands = new LockCommands(new ScriptRunner(ioredisPort(redis as unknown as RedisClient, false, () => undefined), new AbortController().signal), 'publish', LEASE_MS, FENCE_TTL_MS);
  const clientId = randomUUID();
  return {
    async acquire(name) {
      const keys = lockKeys('relock', name);
      const owner = `${clientId}:${randomUUID()}`;
      while ((await commands.acquire(keys, owner, LEASE_MS, FENCE_TTL_MS)).kind !== 'acquired') await sleep(RETRY_MS);
      return { release: async () => void (await commands.release(keys, owner, 1, true)) };
    },
    close: async () => void (await redis.quit()),
  };
};
