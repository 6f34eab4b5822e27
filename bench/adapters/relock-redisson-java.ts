// relock and Redisson on one lock name (issue 21): each process's acquires alternate between a relock
// client in the Redisson layout and a Redisson client stand-in (test/helpers/redisson, Redisson's
// protocol), so both sides contend, exclude and wake each other. Beside relock alone in either
// layout: the price of sharing a lock with Java services.
import { Redis } from 'ioredis';
import { redissonStandIn } from '../../test/helpers/redisson/index.ts';
import { bundle, relockAdapter } from './relock.ts';
import type { Create, Held } from './types.ts';

const relock = relockAdapter(bundle, undefined, undefined, { layout: 'redisson' });

export const create: Create = async (url) => {
  const node = await relock(url);
  const connection = new Redis(url);
  const java = redissonStandIn(connection);
  let calls = 0;
  let threads = 0;
  return {
    acquire(name): Promise<Held> {
      if (calls++ % 2 === 0) return node.acquire(name);
      // A Java thread per acquire: two loops of one process never re-enter each other's hold.
      const threadId = ++threads;
      const lock = java.lock(name);
      return lock.lock(threadId).then(() => ({ release: () => lock.unlock(threadId) }));
    },
    async close() {
      await java.close();
      connection.disconnect();
      await node.close();
    },
  };
};
