// The pub/sub floor: SET NX PX; the release publishes on the lock's channel; one shared subscriber
// per client wakes every local waiter of that lock, which all try again.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { channelOf, connect, lockKey } from './floor-redis.ts';
import { LEASE_MS, type Create, type Held } from './types.ts';

/** One local waiter: woken by any release of its lock. */
interface Sleeper {
  woken: boolean;
  wake: (() => void) | undefined;
}

/** The floor's only guard against a lost message or a crashed holder. */
const SAFETY_RETRY_MS = 1000;

export const create: Create = async (url) => {
  const redis = connect(url);
  const subscriber = new Redis(url);
  const waiting = new Map<string, { sleepers: Set<Sleeper>; subscribed: Promise<unknown> }>();
  subscriber.on('message', (channel: string) => {
    for (const sleeper of waiting.get(channel)?.sleepers ?? []) {
      sleeper.woken = true;
      sleeper.wake?.();
    }
  });
  const attempt = async (key: string, channel: string, token: string): Promise<Held | undefined> => {
    if ((await redis.set(key, token, 'PX', LEASE_MS, 'NX')) !== 'OK') return undefined;
    return { release: async () => void (await redis.compareDeletePublish(key, channel, token)) };
  };
  return {
    async acquire(name) {
      const key = lockKey(name);
      const channel = channelOf(name);
      const token = randomUUID();
      const first = await attempt(key, channel, token);
      if (first) return first;
      let entry = waiting.get(channel);
      if (!entry) waiting.set(channel, (entry = { sleepers: new Set(), subscribed: subscriber.subscribe(channel) }));
      const sleeper: Sleeper = { woken: false, wake: undefined };
      entry.sleepers.add(sleeper);
      try {
        await entry.subscribed;
        for (;;) {
          // Registered before the attempt: a release during it is not lost.
          sleeper.woken = false;
          const held = await attempt(key, channel, token);
          if (held) return held;
          if (sleeper.woken) continue;
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, SAFETY_RETRY_MS);
            sleeper.wake = () => {
              clearTimeout(timer);
              resolve();
            };
          });
          sleeper.wake = undefined;
        }
      } finally {
        entry.sleepers.delete(sleeper);
        if (entry.sleepers.size === 0 && waiting.get(channel) === entry) {
          waiting.delete(channel);
          void subscriber.unsubscribe(channel).catch(() => undefined);
        }
      }
    },
    async close() {
      subscriber.disconnect();
      await redis.quit();
    },
  };
};
